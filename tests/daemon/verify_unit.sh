#!/bin/sh
# SPDX-License-Identifier: MIT
# Checks config/floodgate.service.in with systemd-analyze verify, its paths filled in as an
# install under /usr would, except that ExecStart's binary is swapped for /bin/true: verify
# only checks that it is executable, and a build installs nothing.
# usage: verify_unit.sh UNIT_TEMPLATE
set -eu
if ! command -v systemd-analyze >/dev/null 2>&1; then
  echo "systemd-analyze is not installed: skipped"
  exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
sed -e "s#@FLOODGATE_INSTALL_BINDIR@/floodgate#/bin/true#" \
  -e "s#@FLOODGATE_INSTALL_DOCDIR@#/usr/share/doc/floodgate#" \
  -e "s#@FLOODGATE_CONFIG_FILE@#/etc/floodgate/floodgate.yaml#g" "$1" > "$dir/floodgate.service"
# the template names no other install-time variable
if grep -n '@' "$dir/floodgate.service"; then exit 1; fi
out=$(systemd-analyze verify "$dir/floodgate.service" 2>&1) || { echo "$out"; exit 1; }
# verify exits 0 on some warnings; any line about our unit is a problem
if echo "$out" | grep -q "floodgate.service"; then echo "$out"; exit 1; fi
grep -q '^ExecReload=/bin/kill -HUP \$MAINPID$' "$dir/floodgate.service"
grep -q '^Restart=on-failure$' "$dir/floodgate.service"
echo "ok"
