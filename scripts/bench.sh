#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Benchmarks floodgate in a Release build and prints one table, also written to
# bench/results.json and drawn to bench/results.png. Every row is also given as a ratio to
# its baseline, measured in the same run:
#   - ns/packet under BPF_PROG_TEST_RUN: bare XDP_DROP (baseline), floodgate with 1 rule,
#     16 rules of which one matches, 16 that all match, 100k-prefix allow and deny lists,
#     and the cases docs/performance.md splits the cost by (no rule, a global rule, a
#     source over its limit); each also as ns over the bare drop; 1 rule chained by a
#     tail call to a next XDP program (a bare XDP_PASS), against 1 rule attached alone; and
#     spoofed and tracked sources with their lines cold (each frame run once), against the
#     bare drop run the same way; a global rule ahead of a per-source rule that admits the
#     source, and that drops it, on one CPU and (against that) on two CPUs at once;
#   - flood throughput through a veth pair into a network namespace, `floodgate flood` as
#     the sender, the median of 3 rounds: bare XDP_DROP with 1, 64k and 1M sources (the
#     baselines), floodgate with 1 source, 64k tracked sources (no new-source cap), 64k
#     and 1M sources under the default cap, an nftables netdev-ingress meter and iptables
#     hashlimit with the same per-source limit; and floodgate against nftables;
#   - the flood goals again as paired rounds: in each round the baseline and then floodgate,
#     the row the median of the rounds' ratios (a shared VM's speed swings within minutes);
#   - the library's decisions per second per algorithm (memory store; fixed window is the
#     baseline); the Redis store per connection against redis-benchmark's EVALSHA rate, and
#     the round trips hot-key prefetch saves (with its over-admission, which must be 0) and
#     those of local buckets reconciled every 200 ms (with theirs, bounded);
#   - a spoofed-source flood's passed packets against the new-source cap + untracked limit;
#   - HTTP: floodgate-http-example under wrk on loopback, 8 keep-alive connections,
#     requests/s and p99 latency: no policies (baseline), three memory-store policies on every
#     request, the same three in Redis, and a hot key over its limit (every answer a 429);
#     and the floor of a store that asks Redis on every request: the same route with one
#     Redis PING a request, against the route alone.
# Usage: scripts/bench.sh [--quick] [--only http]
#   --quick: shorter runs, under ten minutes; --only http: the HTTP rows alone (a few minutes)
# Needs root: it loads BPF, creates network namespaces and sets nftables/iptables rules
# inside them; all of that is removed on exit.
set -euo pipefail
FLOODGATE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$FLOODGATE_ROOT/scripts/lib/deps.sh"

QUICK=0
ONLY=
while (($#)); do
  case $1 in
    --quick) QUICK=1 ;;
    --only)
      [[ ${2:-} == http ]] || { echo "error: --only takes 'http' (the HTTP rows alone)" >&2; exit 2; }
      ONLY=http
      shift
      ;;
    -h | --help) sed -n '3,31p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "error: unknown argument '$1': the options are --quick and --only http" >&2; exit 2 ;;
  esac
  shift
done
if [[ $(id -u) -ne 0 ]]; then
  echo "error: the benchmark loads BPF and creates network namespaces: run it as root" >&2
  exit 1
fi

if ((QUICK)); then
  FLOOD_SECONDS=2 COST_REPEAT=50000 COST_RUNS=40 BENCH_MIN_TIME=0.05 HTTP_SECONDS=1 HTTP_ROUNDS=5
else
  FLOOD_SECONDS=5 COST_REPEAT=200000 COST_RUNS=40 BENCH_MIN_TIME=0.5 HTTP_SECONDS=3 HTTP_ROUNDS=9
fi
# one limit for every limiter: low enough that the floods are mostly over it
LIMIT_PPS=${BENCH_LIMIT_PPS:-10}
LIMIT_BURST=${BENCH_LIMIT_BURST:-10}

install_missing_packages "${FLOODGATE_BENCH_PACKAGES[@]}"
ensure_bpffs
BUILD_DIR=${FLOODGATE_BENCH_BUILD_DIR:-$FLOODGATE_ROOT/build-bench}
echo "==> Release build in $BUILD_DIR"
# g++ 12 at -O3 raises false positives that -Werror would make fatal: -Wrestrict in
# std::string's operator+ (GCC bug 105651) and -Walloc-size-larger-than on a checked size
cmake -S "$FLOODGATE_ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS="-Wno-restrict -Wno-alloc-size-larger-than" >/dev/null
BENCH_TARGETS=(floodgate-http-example floodgate_bench_http_floor floodgate_bench_redis)
[[ $ONLY == http ]] ||
  BENCH_TARGETS+=(floodgate floodgate_xdp_cost floodgate_http_bench floodgate_http_redis_bench)
cmake --build "$BUILD_DIR" -j "$(nproc)" --target "${BENCH_TARGETS[@]}" >/dev/null
FG=$BUILD_DIR/userspace/cli/floodgate
DROP_OBJ=$BUILD_DIR/bpf/flood/xdp_drop.bpf.o
TX_OBJ=$BUILD_DIR/bpf/flood/xdp_tx.bpf.o
COST=$BUILD_DIR/tests/bench/floodgate_xdp_cost
HTTP_BENCH=$BUILD_DIR/tests/http/floodgate_http_bench
# Starts its own redis-server on a free loopback port and measures redis-benchmark there.
REDIS_BENCH=$BUILD_DIR/tests/http/floodgate_http_redis_bench
HTTP_EXAMPLE=$BUILD_DIR/userspace/http/example/floodgate-http-example
HTTP_FLOOR=$BUILD_DIR/tests/bench/floodgate_bench_http_floor
BENCH_REDIS=$BUILD_DIR/tests/bench/floodgate_bench_redis  # a private redis-server, as the tests start

WORK=$(mktemp -d /tmp/floodgate-bench.XXXXXX)
ROWS=$WORK/rows.tsv
: >"$ROWS"
source "$FLOODGATE_ROOT/scripts/lib/bench_veth.sh"
source "$FLOODGATE_ROOT/scripts/lib/bench_report.sh"
source "$FLOODGATE_ROOT/scripts/lib/bench_flood.sh"
source "$FLOODGATE_ROOT/scripts/lib/bench_http.sh"
COST_PID=
cleanup() {
  veth_cleanup
  http_cleanup
  [[ -n $COST_PID ]] && rm -rf /sys/fs/bpf/floodgate/bench-cost-"$COST_PID"-*
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Every row but the HTTP ones: the XDP program, the floods, the library and the Redis store.
packet_and_library_rows() {
echo "==> ns/packet under BPF_PROG_TEST_RUN (best of $COST_RUNS x $COST_REPEAT runs)"
"$COST" --repeat "$COST_REPEAT" --runs "$COST_RUNS" >"$WORK/cost.tsv" &
COST_PID=$!
wait "$COST_PID"
bare_ns=$(awk -F'\t' '$1 == "bare_xdp_drop" { print $2 }' "$WORK/cost.tsv")
# "+N ns over bare": the goals of docs/performance.md are stated that way
over_bare() { awk -v ns="$1" -v bare="$bare_ns" 'BEGIN { printf "%+.1f ns over bare", ns - bare }'; }
while IFS=$'\t' read -r name ns; do
  case $name in
    bare_xdp_drop) add_row "test_run" "bare XDP_DROP" "$ns" "ns/packet" "" "" ;;
    floodgate_no_rules) label="floodgate, no rule" detail="parse, settings, counters" ;;
    floodgate_1_global_rule) label="floodgate, 1 global rule" detail="one bucket, no source table" ;;
    floodgate_1_rule) label="floodgate, 1 rule" detail="per source; the source admitted" ;;
    floodgate_1_rule_over_limit) label="floodgate, 1 rule, source over limit" detail="the path of a flood's packets" ;;
    floodgate_1_rule_new_source_capped) label="floodgate, 1 rule, new source over the cap" detail="a spoofed flood's path, its lines in the cache" ;;
    floodgate_16_rules_1_matches) label="floodgate, 16 rules, 1 matches" detail="15 rules for TCP port 80" ;;
    floodgate_16_rules) label="floodgate, 16 rules, all match" detail="every rule charges the packet" ;;
    floodgate_lists_100k) label="floodgate, 100k-prefix allow+deny lists" detail="1 rule; source on neither list" ;;
    bare_xdp_drop_cold)
      add_row "test_run" "bare XDP_DROP, cold" "$ns" "ns/packet" "" \
        "each of 262,144 sources' frames run once, the kernel's clock reads included"
      continue ;;
    floodgate_spoofed_cold | floodgate_tracked_cold)
      label="floodgate, 262,144 spoofed sources, cold" detail="a new source under a refusing cap"
      [[ $name == floodgate_tracked_cold ]] &&
        label="floodgate, 64k tracked sources, cold" detail="each owns its slot, over its limit"
      add_row "test_run" "$label" "$ns" "ns/packet" "bare XDP_DROP, cold" \
        "$detail; each frame run once, so its lines are as cold as in a flood"
      continue ;;
    floodgate_global_then_rule) label="floodgate, global rule, then 1 rule" detail="both admit the source" ;;
    floodgate_global_then_over_limit) label="floodgate, global rule, then a source over its limit" detail="a flood behind a global cap; one CPU" ;;
    floodgate_global_then_over_limit_2cpus)
      detail="needs two CPUs to run on"
      [[ $ns != n/a ]] && detail="$(over_bare "$ns"); another source's frames on the other CPU at the same time"
      add_row "test_run" "floodgate, global rule, then a source over its limit, 2 CPUs" "$ns" \
        "ns/packet" "floodgate, global rule, then a source over its limit" "$detail"
      continue ;;
    floodgate_1_rule_chained)
      add_row "test_run" "floodgate, 1 rule, chained" "$ns" "ns/packet" "floodgate, 1 rule" \
        "$(over_bare "$ns"); its pass tail-calls a next program (a bare XDP_PASS)"
      continue ;;
    *) continue ;;
  esac
  [[ $name == bare_xdp_drop ]] && continue
  add_row "test_run" "$label" "$ns" "ns/packet" "bare XDP_DROP" "$(over_bare "$ns"); $detail"
done <"$WORK/cost.tsv"

echo "==> flood throughput through a veth pair, ${FLOOD_SECONDS}s per row"
veth_cleanup
veth_create

receiver_xdp_drop_on
flood_row "bare XDP_DROP" 1 xdp "" "1 source"
flood_row "bare XDP_DROP, 64k sources" 65536 xdp "" "the same frames as the 64k-source rows"
flood_row "bare XDP_DROP, 1M sources" 1048576 xdp "" "the same frames as the 1M-source row"
receiver_xdp_drop_off

receiver_floodgate_on
flood_row "floodgate, 1 source" 1 floodgate "bare XDP_DROP" "$LIMIT_PPS pps/source, 262144-slot table"
receiver_floodgate_off

# Every one of 64k sources tracked (no cap on new sources taking a slot) and over its limit:
# one slot per source, each packet a different slot. At 1 packet/s each: a flood of a few
# Mpps sends each source tens a second, so nearly every packet is a drop, as the row means
# to measure (at 10/s, 64k sources may pass 655k packets/s into the stack).
cat >"$WORK/tracked.yaml" <<YAML
rules:
  - name: per-source
    limit: {pps: 1, burst: 1}
    untracked: {new_sources: unlimited}
YAML
receiver_floodgate_on_config "$WORK/tracked.yaml"
flood_row "floodgate, 64k tracked sources" 65536 floodgate "bare XDP_DROP, 64k sources" \
  "1 pps/source, new_sources unlimited: every source has a slot, all over the limit"
receiver_floodgate_off

receiver_floodgate_on
flood_row "floodgate, 64k sources" 65536 floodgate "bare XDP_DROP, 64k sources" \
  "$LIMIT_PPS pps/source, default new-source cap (10k/s)"
receiver_floodgate_off
receiver_floodgate_on
flood_row "floodgate, 1M sources" 1048576 floodgate "bare XDP_DROP, 1M sources" \
  "$LIMIT_PPS pps/source, 262144-slot table, default new-source cap (10k/s): mostly untracked"
receiver_floodgate_off

# SYN cookies: a spoofed SYN flood at port 80, each SYN answered at the NIC. The rate of
# answers (SYN-ACKs sent back by XDP_TX) against a program that sends every frame back
# unchanged: the price of the rule step, the kernel's cookie hash and the rewrite.
cat >"$WORK/cookies.yaml" <<'YAML'
rules:
  - name: syn
    match: {protocol: tcp, dst_ports: [80], tcp_flags: {syn: set, ack: clear}}
    limit: {pps: 50, burst: 100}
    untracked: {new_sources: 1000, pps: 1000}
    syn_cookies: always
YAML
FLOOD_ARGS=(--protocol tcp-syn --dst-port 80)
sender_xdp_drop_on
receiver_xdp_tx_on
flood_row "bare XDP_TX, SYN flood, 1M sources" 1048576 xdp_tx "" "every frame sent back unchanged"
receiver_xdp_tx_off
target_listener_on 80
receiver_floodgate_on_config "$WORK/cookies.yaml"
flood_row "floodgate SYN cookies, 1M sources" 1048576 cookie "bare XDP_TX, SYN flood, 1M sources" \
  "syn_cookies: always; every SYN of a source without a slot answered with a SYN-ACK"
receiver_floodgate_off
target_listener_off
sender_xdp_drop_off
FLOOD_ARGS=()

# Spoofed-source flood: far more sources than table slots, every packet from a new one.
# The defence (the default new-source cap of 10k/s, and the untracked bucket with the
# per-source limit) lets at most cap + limit through a second: how close it holds to that
# is the second pair of rows (passed against the allowance, as a ratio).
receiver_floodgate_on --table-size 65536
# one round: what passed is compared with the allowance of that round's time
FLOOD_ROUNDS=1 flood_row "floodgate, 10M sources, 64k-slot table" 10000000 floodgate "bare XDP_DROP" \
  "spoofed-source flood, each source once; $LIMIT_PPS pps/source" 10000000
spoofed_passed=$(floodgate_packets '.verdict == "pass" and .reason == "default"')
spoofed_seconds=$(jq .seconds <<<"$FLOOD_JSON")
# rates × (time + one 4 ms tick) + the bursts (a tenth of a second of the cap, and the limit's)
spoofed_allowed=$(awk -v s="$spoofed_seconds" -v p="$LIMIT_PPS" -v b="$LIMIT_BURST" \
  'BEGIN { printf "%.0f", (10000 + p) * (s + 0.004) + 1000 + b }')
add_row "spoofed" "allowance: (cap + untracked) x time" "$spoofed_allowed" \
  "packets" "" "10000/s + $LIMIT_PPS/s over ${spoofed_seconds}s"
add_row "spoofed" "passed during the 10M-source flood" "$spoofed_passed" "packets" \
  "allowance: (cap + untracked) x time" "must stay at or below 1.05"
receiver_floodgate_off

receiver_nft_on
flood_row "nftables ingress meter, 1 source" 1 nft "bare XDP_DROP" "$LIMIT_PPS pps/source, GRO on"
flood_row "nftables ingress meter, 64k sources" 65536 nft "bare XDP_DROP, 64k sources" \
  "$LIMIT_PPS pps/source, GRO on"
receiver_nft_off

# floodgate against the nftables meter, the same per-source limit and sources
row_value() { awk -F'\t' -v g="$1" -v n="$2" '$1 == g && $2 == n { print $3 }' "$ROWS"; }
add_row "vs_nftables" "nftables ingress meter, 1 source" \
  "$(row_value flood "nftables ingress meter, 1 source")" "Mpps" "" ""
add_row "vs_nftables" "floodgate, 1 source" "$(row_value flood "floodgate, 1 source")" "Mpps" \
  "nftables ingress meter, 1 source" "goal: at least 4x"
add_row "vs_nftables" "nftables ingress meter, 64k sources" \
  "$(row_value flood "nftables ingress meter, 64k sources")" "Mpps" "" ""
add_row "vs_nftables" "floodgate, 64k sources" "$(row_value flood "floodgate, 64k sources")" \
  "Mpps" "nftables ingress meter, 64k sources" "default new-source cap; goal: at least 4x"

receiver_iptables_on
flood_row "iptables raw hashlimit, 64k sources" 65536 iptables "bare XDP_DROP" \
  "$LIMIT_PPS pps/source, $(iptables -V | awk '{print $2, $3}'), GRO on"
receiver_iptables_off

# The goals of docs/performance.md as paired rounds (bench_flood.sh): each ratio from floods
# of its baseline and of floodgate one after the other, round by round.
echo "==> paired rounds: baseline, then floodgate, ${FLOOD_SECONDS}s each, $FLOOD_ROUNDS rounds"
receiver_tracked_on() { receiver_floodgate_on_config "$WORK/tracked.yaml"; }
paired_rows_start
paired_row "floodgate / bare XDP_DROP, 1 source" 1 receiver_xdp_drop_on receiver_xdp_drop_off \
  xdp receiver_floodgate_on receiver_floodgate_off floodgate "goal: at least 0.9"
paired_row "floodgate / bare XDP_DROP, 64k tracked sources" 65536 receiver_xdp_drop_on \
  receiver_xdp_drop_off xdp receiver_tracked_on receiver_floodgate_off floodgate \
  "every source has a slot and is over its limit; goal: at least 0.75"
paired_row "floodgate / bare XDP_DROP, 1M sources" 1048576 receiver_xdp_drop_on \
  receiver_xdp_drop_off xdp receiver_floodgate_on receiver_floodgate_off floodgate \
  "default new-source cap; goal: at least 0.6"
paired_row "floodgate / nftables meter, 1 source" 1 receiver_nft_on receiver_nft_off nft \
  receiver_floodgate_on receiver_floodgate_off floodgate "goal: at least 4"
paired_row "floodgate / nftables meter, 64k sources" 65536 receiver_nft_on receiver_nft_off nft \
  receiver_floodgate_on receiver_floodgate_off floodgate "default new-source cap; goal: at least 4"
veth_cleanup

echo "==> library decisions per second (Google Benchmark, one hot key)"
# Google Benchmark prints its context (CPU, load, a warning that Debian's library is a debug
# build, which does not touch the code measured) on stderr: kept, and shown on a failure.
quietly() {
  "$@" 2>"$WORK/bench.err" || { cat "$WORK/bench.err" >&2; return 1; }
}
quietly "$HTTP_BENCH" --benchmark_filter='BM_HotKey/[0-9]+/real_time/threads:1$' \
  --benchmark_min_time="$BENCH_MIN_TIME" --benchmark_out="$WORK/http.json" \
  --benchmark_out_format=json >/dev/null
while IFS=$'\t' read -r label per_second; do
  baseline="memory: fixed_window"
  [[ $label == fixed_window ]] && baseline=""
  add_row "library" "memory: $label" "$per_second" "M decisions/s" "$baseline" "1 thread, virtual clock"
done < <(jq -r '.benchmarks[] | [.label, (.items_per_second / 1e6 | . * 1000 | round / 1000)] | @tsv' "$WORK/http.json")

# a million keys: each decision a cache miss; with prefetch, several misses overlap
quietly "$HTTP_BENCH" --benchmark_filter='BM_ManyKeys<[08]>/algorithm:4/keys:1000000' \
  --benchmark_min_time="$BENCH_MIN_TIME" --benchmark_out="$WORK/keys.json" \
  --benchmark_out_format=json >/dev/null
while IFS=$'\t' read -r ahead threads per_second; do
  label="memory: gcra, 1M keys, $threads thread(s)"
  ((ahead > 0)) && label+=", prefetch"
  add_row "library" "$label" "$per_second" "M decisions/s" "memory: gcra" \
    "$( ((ahead > 0)) && echo "the key $ahead decisions ahead prefetched" || echo "one at a time")"
done < <(jq -r '.benchmarks[] | (.name | capture("<(?<a>[0-9]+)>.*threads:(?<t>[0-9]+)")) as $m |
  [$m.a, $m.t, (.items_per_second / 1e6 | . * 1000 | round / 1000)] | @tsv' "$WORK/keys.json")

echo "==> the Redis store against redis-benchmark's own EVALSHA rate"
quietly "$REDIS_BENCH" --benchmark_min_time="$BENCH_MIN_TIME" --benchmark_out="$WORK/redis.json" \
  --benchmark_out_format=json >"$WORK/redis.txt"
# "baseline: redis-benchmark EVALSHA, 1 connection: 20500/s; with -P 64: 105000/s"
read -r evalsha evalsha_p64 < <(sed -n 's/^baseline: .*connection: \([0-9.]*\)\/s; with -P 64: \([0-9.]*\)\/s.*/\1 \2/p' \
  "$WORK/redis.txt")
base="redis-benchmark EVALSHA, 1 connection"
add_row "redis" "$base" "$(awk -v r="$evalsha" 'BEGIN { printf "%.1f", r / 1e3 }')" "k decisions/s" "" \
  "one script call per round trip"
add_row "redis" "redis-benchmark EVALSHA -P 64" "$(awk -v r="$evalsha_p64" 'BEGIN { printf "%.1f", r / 1e3 }')" \
  "k decisions/s" "$base" "64 calls per round trip"
while IFS=$'\t' read -r name per_second; do
  case $name in
    BM_DecideOneByOne*) label="store, one round trip each" ;;
    BM_DecidePipelined/8*) label="store, 8 per pipeline" ;;
    BM_DecidePipelined/64*) label="store, 64 per pipeline" ;;
    *) continue ;;
  esac
  add_row "redis" "$label" "$per_second" "k decisions/s" "$base" "1 connection"
done < <(jq -r '.benchmarks[] | [.name, (.items_per_second / 1e3 | . * 10 | round / 10)] | @tsv' "$WORK/redis.json")
# hot-key prefetch: round trips per decision (batch 1 is the baseline) and over-admission
while IFS=$'\t' read -r batch load trips over; do
  add_row "prefetch" "round trips/decision, batch $batch, ${load}% load" "$trips" "trips" \
    "round trips/decision, batch 1, ${load}% load" "4 instances, 1 hot key; over-admitted $over"
done < <(jq -r '.benchmarks[] | select(.name | startswith("BM_PrefetchFleet")) |
  (.name | capture("batch:(?<b>[0-9]+)/load_pct:(?<l>[0-9]+)")) as $a |
  [$a.b, $a.l, (.round_trips_per_decision * 1000 | round / 1000), .over_admitted] | @tsv' "$WORK/redis.json")
# local buckets reconciled every 200 ms: round trips per decision against the exact store's
# one (the prefetch rows' batch 1, measured in the same run), and over-admission
while IFS=$'\t' read -r load trips over; do
  add_row "prefetch" "round trips/decision, sync 200ms, ${load}% load" "$trips" "trips" \
    "round trips/decision, batch 1, ${load}% load" "4 instances, 1 key; over-admitted $over"
done < <(jq -r '.benchmarks[] | select(.name | startswith("BM_SyncFleet")) |
  (.name | capture("load_pct:(?<l>[0-9]+)")) as $a |
  [$a.l, (.round_trips_per_decision * 1000 | round / 1000), .over_admitted] | @tsv' "$WORK/redis.json")
}
[[ $ONLY == http ]] || packet_and_library_rows

echo "==> HTTP: floodgate-http-example under wrk on loopback ($HTTP_ROUNDS rounds of ${HTTP_SECONDS}s per row)"
http_rows

mkdir -p "$FLOODGATE_ROOT/bench"
META=$(jq -n --arg date "$(date -u +%FT%TZ)" --arg kernel "$(uname -r)" --argjson cpus "$(nproc)" \
  --argjson quick "$QUICK" --arg only "$ONLY" --argjson flood_seconds "$FLOOD_SECONDS" \
  --argjson limit_pps "$LIMIT_PPS" --argjson limit_burst "$LIMIT_BURST" \
  --argjson http_seconds "$HTTP_SECONDS" --argjson http_rounds "$HTTP_ROUNDS" \
  --argjson http_connections "$HTTP_CONNECTIONS" --arg http_loadavg "$HTTP_LOADAVG" \
  --arg commit "$(git -C "$FLOODGATE_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
  '{date: $date, kernel: $kernel, cpus: $cpus, quick: ($quick == 1), only: (if $only == "" then null else $only end), flood_seconds: $flood_seconds,
    limit_pps: $limit_pps, limit_burst: $limit_burst, http_seconds: $http_seconds,
    http_rounds: $http_rounds, http_connections: $http_connections, http_loadavg: $http_loadavg,
    commit: $commit}')
write_json "$FLOODGATE_ROOT/bench/results.json" "$META"
write_plot "$FLOODGATE_ROOT/bench/results.png"
echo
print_table
echo
echo "written: bench/results.json, bench/results.png"
echo "finished in $((SECONDS / 60))m $((SECONDS % 60))s (build included)"
