#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Where floodgate's XDP program spends its time in one of floodgate_xdp_cost's cases, by
# source line: perf samples the CPUs while the case runs under BPF_PROG_TEST_RUN, and each
# sample in the program's JIT image is put on the source line it belongs to
# (floodgate_xdp_lines). Prints the lines that take the most samples, each as a share of
# the program's samples; a source line inlined in several places is summed.
# Usage: scripts/profile_xdp.sh [CASE] [SECONDS] [LINES]
#   CASE: a name floodgate_xdp_cost prints (default floodgate_1_rule); SECONDS of sampling
#   (default 8); LINES shown (default 40). Needs root (BPF, perf of the kernel).
set -euo pipefail
FLOODGATE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$FLOODGATE_ROOT/scripts/lib/deps.sh"

CASE=${1:-floodgate_1_rule}
SECONDS_SAMPLED=${2:-8}
SHOWN=${3:-40}
[[ $CASE == -h || $CASE == --help ]] && { sed -n '3,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0; }
[[ $SECONDS_SAMPLED =~ ^[1-9][0-9]?$ && $SHOWN =~ ^[1-9][0-9]{0,3}$ ]] || {
  echo "error: SECONDS (1-99) and LINES (1-9999) are whole numbers; see --help" >&2
  exit 2
}
if [[ $(id -u) -ne 0 ]]; then
  echo "error: profiling loads BPF and samples the kernel: run it as root" >&2
  exit 1
fi

install_missing_packages linux-perf
ensure_bpffs
BUILD_DIR=${FLOODGATE_BENCH_BUILD_DIR:-$FLOODGATE_ROOT/build-bench}
echo "==> Release build in $BUILD_DIR" >&2
cmake -S "$FLOODGATE_ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS="-Wno-restrict -Wno-alloc-size-larger-than" >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)" --target floodgate_xdp_cost floodgate_xdp_lines >/dev/null
COST=$BUILD_DIR/tests/bench/floodgate_xdp_cost
LINES=$BUILD_DIR/tests/bench/floodgate_xdp_lines

WORK=$(mktemp -d)
COST_PID=
cleanup() {
  if [[ -n $COST_PID ]]; then
    # the killed tool's status is not this script's (under set -e it would end the cleanup)
    kill "$COST_PID" 2>/dev/null && { wait "$COST_PID" 2>/dev/null || true; }
    # a stopped tool leaves its limiter's pins (they go when the tool ends by itself)
    rm -rf /sys/fs/bpf/floodgate/bench-cost-"$COST_PID"-*
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# The program floodgate loads: floodgate_xdp, or floodgate_older (no may_goto, see status).
# Any other floodgate loaded on this machine would be taken for the case's: refuse then.
program_ids() {
  bpftool prog show | awk '/ name floodgate_(xdp|older) / { sub(":", "", $1); print $1 }'
}
if [[ -n $(program_ids) ]]; then
  echo "error: a floodgate program is loaded already (bpftool prog show); detach it first" >&2
  exit 1
fi
# bounded: the case ends by itself after --runs runs (each at least 3M packets), the last
# after the sampling on any machine where a packet takes 10 ns or more
"$COST" --case "$CASE" --repeat 3000000 --runs $((SECONDS_SAMPLED * 40 + 40)) >"$WORK/cost" 2>&1 &
COST_PID=$!
ID=
for _ in $(seq 600); do
  ID=$(program_ids | head -n1)
  [[ -n $ID ]] && break
  kill -0 "$COST_PID" 2>/dev/null || { cat "$WORK/cost" >&2; exit 1; }
  sleep 0.1
done
[[ -n $ID ]] || { echo "error: the case's program did not load within a minute" >&2; exit 1; }
"$LINES" --id "$ID" >"$WORK/lines"
"$LINES" --id "$ID" --functions >"$WORK/functions"
echo "==> sampling program $ID ($CASE) for $SECONDS_SAMPLED s" >&2
if ! perf record -q -a -o "$WORK/perf.data" -- sleep "$SECONDS_SAMPLED" 2>"$WORK/perf.err"; then
  echo "error: perf record failed: $(head -n1 "$WORK/perf.err")" >&2
  exit 1
fi
if ! perf script -i "$WORK/perf.data" -F ip >"$WORK/ips" 2>"$WORK/perf.err"; then
  echo "error: perf script failed: $(head -n1 "$WORK/perf.err")" >&2
  exit 1
fi

# Samples within the program's functions, and line starts, merged by address: each sample
# goes to the last line that starts at or before it.
awk -F'\t' 'FNR == NR { start[FNR] = $1; end[FNR] = $2; n = FNR; next }
    { ip = $1; gsub(/[ \t]/, "", ip); ip = sprintf("%016s", ip); for (i = 1; i <= n; i++) if (ip >= start[i] && ip < end[i]) { print ip "\tS"; next } }' \
    "$WORK/functions" "$WORK/ips" >"$WORK/samples"
sort -k1,1 -s "$WORK/lines" "$WORK/samples" |
  awk -F'\t' -v shown="$SHOWN" '
    $2 == "S" { if (where != "") { count[where]++; total++ } next }
    { where = $2 "\t" $3 }
    END {
      if (!total) { print "error: no sample fell in the program" > "/dev/stderr"; exit 1 }
      printf "%d samples in the program\n", total
      for (w in count) printf "%6.1f%%\t%s\n", 100 * count[w] / total, w | "sort -rn | head -n " shown
    }'
