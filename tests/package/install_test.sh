#!/bin/sh
# SPDX-License-Identifier: MIT
# `cmake --install --prefix` of the floodgate component into a DESTDIR under a temp dir (so
# nothing touches the real /etc): the binary runs, the unit names the installed paths and
# verifies, the configs check, the docs and a valid man page are there, nothing lands
# outside the prefix but the config file, and a config file already there is kept.
# usage: install_test.sh BUILD_DIR SOURCE_DIR
# The install layout comes from the environment, as configured: FG_VERSION, FG_BINDIR,
# FG_DATADIR, FG_DOCDIR, FG_MANDIR, FG_UNITDIR (relative to the prefix), FG_CONFIG_FILE.
set -eu
build=$1 source=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
prefix=/opt/floodgate-install-test
fail() { echo "FAIL: $*" >&2; exit 1; }

install_floodgate() {
  DESTDIR=$root cmake --install "$build" --prefix "$prefix" --component floodgate >"$tmp/install.log" 2>&1 \
    || { cat "$tmp/install.log"; fail "cmake --install failed"; }
}

echo "==> cmake --install --prefix $prefix, DESTDIR=$root"
install_floodgate
p=$root$prefix

bin=$p/$FG_BINDIR/floodgate
[ -x "$bin" ] || fail "no executable $bin"
[ "$("$bin" --version)" = "$FG_VERSION" ] || fail "floodgate --version is not $FG_VERSION"

echo "==> the unit names the installed paths and verifies"
unit=$p/$FG_UNITDIR/floodgate.service
[ -f "$unit" ] || fail "no unit $unit"
grep -qx "ExecStart=$prefix/$FG_BINDIR/floodgate run --config $FG_CONFIG_FILE" "$unit" \
  || { grep ExecStart "$unit"; fail "ExecStart does not name the installed binary and config"; }
grep -qx "Documentation=file://$prefix/$FG_DOCDIR/README.md" "$unit" \
  || { grep Documentation "$unit"; fail "Documentation does not name the installed README"; }
if grep -n '@' "$unit"; then fail "the unit has unfilled @VARIABLES@"; fi
if command -v systemd-analyze >/dev/null 2>&1; then
  # as verify_unit.sh: the binary's path is outside DESTDIR, so verify runs /bin/true's
  sed "s#^ExecStart=$prefix/$FG_BINDIR/floodgate#ExecStart=/bin/true#" "$unit" >"$tmp/floodgate.service"
  out=$(systemd-analyze verify "$tmp/floodgate.service" 2>&1) || { echo "$out"; fail "systemd-analyze verify"; }
  if echo "$out" | grep -q floodgate.service; then echo "$out"; fail "systemd-analyze verify warned"; fi
fi

echo "==> configs, the examples with their lists, and the config file"
share=$p/$FG_DATADIR/floodgate
cmp "$source/config/floodgate.yaml" "$share/floodgate.yaml" || fail "share/floodgate/floodgate.yaml"
for example in "$source"/config/examples/*.yaml "$source"/config/examples/lists/*; do
  relative=${example#"$source/config/"}
  cmp "$example" "$share/$relative" || fail "share/floodgate/$relative"
done
for example in "$share"/examples/*.yaml; do
  "$bin" check "$example" >/dev/null || fail "floodgate check $example"
done
etc=$root$FG_CONFIG_FILE
cmp "$source/config/floodgate.yaml" "$etc" || fail "$FG_CONFIG_FILE is not the default config"
"$bin" check "$etc" >/dev/null || fail "floodgate check $etc"

echo "==> docs and the man page"
doc=$p/$FG_DOCDIR
for f in $(cd "$source" && ls README.md docs/*.md config/grafana/* config/prometheus/*); do
  relative=${f#config/}
  cmp "$source/$f" "$doc/$relative" || fail "$FG_DOCDIR/$relative"
done
man=$p/$FG_MANDIR/man1/floodgate.1
[ -f "$man" ] || fail "no man page $man"
warnings=$(groff -man -Tutf8 -ww -z "$man" 2>&1) || fail "groff could not format $man"
[ -z "$warnings" ] || { echo "$warnings"; fail "groff warns about $man"; }
page=$(MANWIDTH=200 man -l "$man" 2>/dev/null) || fail "man -l $man"
# every command of the CLI has its section
for command in $("$bin" --help | awk '/^Subcommands:/ {on = 1; next} on && /^  [a-z]/ {print $1}'); do
  echo "$page" | grep -q "^ *floodgate $command\$" || fail "the man page has no section for $command"
done
echo "$page" | grep -q "floodgate $FG_VERSION" || fail "the man page does not give version $FG_VERSION"

echo "==> nothing outside the prefix but the config file"
outside=$(cd "$root" && find . \( -type f -o -type l \) | sed 's#^\.##' \
  | { grep -v -e "^$prefix/" -e "^$FG_CONFIG_FILE\$" || true; })
[ -z "$outside" ] || { echo "$outside"; fail "files installed outside $prefix"; }

echo "==> an existing config file is kept"
echo "# the operator's own" >"$etc"
install_floodgate
[ "$(cat "$etc")" = "# the operator's own" ] || fail "cmake --install overwrote $FG_CONFIG_FILE"
grep -q "Keeping: $etc" "$tmp/install.log" || { cat "$tmp/install.log"; fail "the install did not say it kept $etc"; }
echo ok
