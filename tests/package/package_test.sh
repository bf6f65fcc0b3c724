#!/bin/sh
# SPDX-License-Identifier: MIT
# The Debian packages on this machine: cpack writes them into a temp dir (not the build
# tree), dpkg -i installs them, the installed floodgate runs and checks the installed config,
# the unit verifies and is not enabled; dpkg -r removes every file but the conffile, and
# dpkg --purge that too. floodgate is never left installed, whatever fails, and an
# /etc/floodgate that was there before is put back.
# usage: package_test.sh BUILD_DIR   (needs root); FG_VERSION and FG_CONFIG_FILE from the env
set -eu
build=$1
fail() { echo "FAIL: $*" >&2; exit 1; }

if [ "$(id -u)" -ne 0 ]; then
  echo "skipped: dpkg -i needs root"
  exit 77
fi
for tool in cpack dpkg dpkg-deb; do
  command -v "$tool" >/dev/null || fail "$tool is missing (apt-get install cmake dpkg)"
done

# The packages cpack is configured to write: one per install component with files.
cpack_config=$build/CPackConfig.cmake
packages=""
for component in $(sed -n 's/^set(CPACK_COMPONENTS_ALL "\(.*\)")$/\1/p' "$cpack_config" | tr ';' ' '); do
  upper=$(echo "$component" | tr '[:lower:]' '[:upper:]')
  package=$(sed -n "s/^set(CPACK_DEBIAN_${upper}_PACKAGE_NAME \"\(.*\)\")\$/\1/p" "$cpack_config")
  [ -n "$package" ] || fail "CPackConfig.cmake names no package for component $component"
  packages="$packages $package"
done
echo "$packages" | tr " " "\n" | grep -qx floodgate || fail "CPackConfig.cmake packages no floodgate component"
for package in $packages; do
  if dpkg-query -W -f '${Status}\n' "$package" 2>/dev/null | grep -qv "not-installed"; then
    fail "$package is already installed on this machine and the test would replace it:" \
      "dpkg --purge $package first"
  fi
done

tmp=$(mktemp -d)
installed=""
cleanup() {
  status=$?
  for package in $installed; do dpkg --purge "$package" >/dev/null 2>&1 || true; done
  if [ -e "$tmp/config-before" ]; then
    mkdir -p "$(dirname "$FG_CONFIG_FILE")"
    mv "$tmp/config-before" "$FG_CONFIG_FILE"
  fi
  rm -rf "$tmp"
  exit $status
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM
# dpkg must find no config file of the operator's where its conffile goes: it is put back
if [ -e "$FG_CONFIG_FILE" ]; then mv "$FG_CONFIG_FILE" "$tmp/config-before"; fi

echo "==> cpack -G DEB into $tmp/out"
cpack --config "$cpack_config" -B "$tmp/out" >"$tmp/cpack.log" 2>&1 \
  || { cat "$tmp/cpack.log"; fail "cpack failed"; }
debs=""
for package in $packages; do
  deb=$(ls "$tmp/out/${package}_${FG_VERSION}"-*.deb 2>/dev/null) \
    || { cat "$tmp/cpack.log"; fail "cpack wrote no $package .deb"; }
  debs="$debs $deb"
done
deb=$(ls "$tmp/out/floodgate_${FG_VERSION}"-*.deb)
dpkg-deb -f "$deb" Depends | grep -q "libbpf1" || fail "floodgate's Depends lacks libbpf1"
[ "$(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles)" = "$FG_CONFIG_FILE" ] \
  || fail "the conffiles of floodgate are not exactly $FG_CONFIG_FILE"

# the library as Debian splits one: libfloodgate0 the shared objects, with a shlibs file
# and ldconfig run on install and removal; libfloodgate-dev the rest, on exactly that libfloodgate0
runtime_deb=$(ls "$tmp/out/libfloodgate0_${FG_VERSION}"-*.deb) || fail "cpack wrote no libfloodgate0 .deb"
dev_deb=$(ls "$tmp/out/libfloodgate-dev_${FG_VERSION}"-*.deb) || fail "cpack wrote no libfloodgate-dev .deb"
dpkg-deb -f "$dev_deb" Depends | grep -q "libfloodgate0 (= ${FG_VERSION}-" \
  || fail "libfloodgate-dev's Depends lacks libfloodgate0 (= $FG_VERSION-...)"
dpkg-deb -f "$runtime_deb" Depends | grep -q "libhiredis" || fail "libfloodgate0's Depends lacks hiredis"
dpkg-deb --ctrl-tarfile "$runtime_deb" | tar -xO ./shlibs | grep -q "^libfloodgate_ratelimit 0 libfloodgate0" \
  || fail "libfloodgate0 has no shlibs entry for libfloodgate_ratelimit.so.0"
for script in postinst postrm; do
  dpkg-deb --ctrl-tarfile "$runtime_deb" | tar -xO "./$script" | grep -q ldconfig \
    || fail "libfloodgate0's $script does not run ldconfig"
done
for soname in ratelimit redis httplib; do
  dpkg-deb -c "$runtime_deb" | grep -q "/libfloodgate_$soname.so.0 " \
    || fail "libfloodgate0 lacks libfloodgate_$soname.so.0"
  dpkg-deb -c "$dev_deb" | grep -q "/libfloodgate_$soname.so -> " \
    || fail "libfloodgate-dev lacks the libfloodgate_$soname.so link"
done
if dpkg-deb -c "$dev_deb" | grep -E '/libfloodgate_[a-z]+\.so\.0'; then fail "libfloodgate-dev holds shared objects (above)"; fi

echo "==> dpkg -i$debs"
installed=$packages
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive dpkg -i $debs >"$tmp/dpkg.log" 2>&1 \
  || { cat "$tmp/dpkg.log"; fail "dpkg -i failed"; }
for package in $packages; do
  dpkg -L "$package" >"$tmp/$package.list"
  # what dpkg -r must remove: every file and link, not the directories others share
  while read -r path; do
    if [ ! -d "$path" ] || [ -L "$path" ]; then echo "$path"; fi
  done <"$tmp/$package.list" >"$tmp/$package.files"
done
grep -qx /usr/bin/floodgate "$tmp/floodgate.files" || fail "floodgate does not own /usr/bin/floodgate"

echo "==> the installed floodgate"
[ "$(/usr/bin/floodgate --version)" = "$FG_VERSION" ] || fail "/usr/bin/floodgate --version"
/usr/bin/floodgate check "$FG_CONFIG_FILE" || fail "floodgate check $FG_CONFIG_FILE"
unit=$(grep '/systemd/system/floodgate.service$' "$tmp/floodgate.files") \
  || fail "the package has no floodgate.service"
grep -qx "ExecStart=/usr/bin/floodgate run --config $FG_CONFIG_FILE" "$unit" \
  || fail "$unit does not run /usr/bin/floodgate"
grep -qx "Documentation=file:///usr/share/doc/floodgate/README.md" "$unit" \
  || fail "$unit does not document /usr/share/doc/floodgate"
[ -f /usr/share/doc/floodgate/README.md ] || fail "no /usr/share/doc/floodgate/README.md"
out=$(systemd-analyze verify "$unit" 2>&1) || { echo "$out"; fail "systemd-analyze verify $unit"; }
if echo "$out" | grep -q floodgate.service; then echo "$out"; fail "systemd-analyze verify warned"; fi
if ls /etc/systemd/system/*.wants/floodgate.service 2>/dev/null; then
  fail "the package enabled floodgate.service"
fi
man -w floodgate 2>/dev/null | grep -q "^/usr/share/man/man1/floodgate.1" || fail "man -w floodgate"
ldconfig -p | grep -q "libfloodgate_ratelimit.so.0 " || fail "ldconfig does not know libfloodgate_ratelimit.so.0"

echo "==> dpkg -r leaves only the conffile"
# shellcheck disable=SC2086
dpkg -r $packages >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log"; fail "dpkg -r failed"; }
for package in $packages; do
  while read -r path; do
    if [ "$path" = "$FG_CONFIG_FILE" ]; then continue; fi
    if [ -e "$path" ] || [ -L "$path" ]; then fail "dpkg -r $package left $path"; fi
  done <"$tmp/$package.files"
done
if ldconfig -p | grep "libfloodgate_"; then fail "dpkg -r left libfloodgate in ldconfig's cache"; fi
for dir in /usr/share/floodgate /usr/share/doc/floodgate; do
  [ ! -e "$dir" ] || fail "dpkg -r left $dir"
done
[ -f "$FG_CONFIG_FILE" ] || fail "dpkg -r removed the conffile $FG_CONFIG_FILE"
dpkg-query -W -f '${Status}\n' floodgate | grep -q "config-files" || fail "floodgate is not in config-files state"

echo "==> dpkg --purge removes the conffile"
# shellcheck disable=SC2086
dpkg --purge $packages >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log"; fail "dpkg --purge failed"; }
installed=""
[ ! -e "$FG_CONFIG_FILE" ] || fail "dpkg --purge left $FG_CONFIG_FILE"
echo ok
