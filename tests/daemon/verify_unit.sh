#!/bin/sh
# SPDX-License-Identifier: MIT
# Checks config/floodgate.service with systemd-analyze verify. ExecStart's binary is swapped
# for /bin/true, since verify only checks that it is executable and no build installs it.
# usage: verify_unit.sh UNIT_FILE
set -eu
if ! command -v systemd-analyze >/dev/null 2>&1; then
  echo "systemd-analyze is not installed: skipped"
  exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
sed "s#/usr/local/bin/floodgate#/bin/true#" "$1" > "$dir/floodgate.service"
out=$(systemd-analyze verify "$dir/floodgate.service" 2>&1) || { echo "$out"; exit 1; }
# verify exits 0 on some warnings; any line about our unit is a problem
if echo "$out" | grep -q "floodgate.service"; then echo "$out"; exit 1; fi
grep -q '^ExecReload=/bin/kill -HUP \$MAINPID$' "$dir/floodgate.service"
grep -q '^Restart=on-failure$' "$dir/floodgate.service"
echo "ok"
