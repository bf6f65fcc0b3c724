#!/bin/sh
# SPDX-License-Identifier: MIT
# No script defines a function that one of the libraries it sources defines too, and no two
# of those libraries define the same one: in bash the definition sourced last wins silently,
# and a caller of the other gets its arguments read another way (scripts/bench.sh once lost
# its flood rows to a second `median` that read stdin).
# Usage: sourced_functions_test.sh SOURCE_DIR
set -eu
root=${1:?usage: sourced_functions_test.sh SOURCE_DIR}
cd "$root"
failed=0
checked=0
# the functions a file defines, one name a line
defined() { grep -oE '^[A-Za-z_][A-Za-z0-9_]*\(\)' "$1" | sed 's/()$//'; }
# the libraries a file sources, by their path from the source tree's root
sourced() { grep -oE 'scripts/lib/[A-Za-z0-9_]+\.sh' "$1" | sort -u; }
for script in scripts/*.sh scripts/lib/*.sh; do
  [ -f "$script" ] || continue  # a pattern that matched nothing
  files=$script
  for lib in $(sourced "$script"); do
    [ -f "$lib" ] || { echo "FAIL: $script sources $lib, which does not exist"; failed=1; continue; }
    files="$files $lib $(sourced "$lib" | tr '\n' ' ')"
  done
  # shellcheck disable=SC2086  # word splitting is the point: one path each
  twice=$(for f in $(printf '%s\n' $files | sort -u); do defined "$f"; done | sort | uniq -d)
  if [ -n "$twice" ]; then
    echo "FAIL: $script and what it sources define more than once: $(echo "$twice" | tr '\n' ' ')"
    failed=1
  fi
  checked=$((checked + 1))
done
[ "$checked" -gt 0 ] || { echo "FAIL: no script found under $root/scripts"; exit 1; }
[ "$failed" -eq 0 ] && echo "ok: $checked scripts, no function defined twice along what they source"
exit "$failed"
