# SPDX-License-Identifier: MIT
# The network of scripts/bench.sh's flood rows: a veth pair from a sending namespace into a
# target namespace, the receivers the rows compare (bare XDP_DROP, floodgate, nftables, iptables),
# their arrival counters, and the tear-down. Sourced; expects FG, DROP_OBJ, TX_OBJ and WORK set.

# The tag in every name: the process id in base 36, at most 5 characters. A NAPI thread is
# named napi/<interface>-<id>, cut at 15 characters, so an interface name of at most 9 keeps
# the dash, and one bench's threads are told from another's whose tag begins the same.
bench_tag() {
  local n=$1 digits=0123456789abcdefghijklmnopqrstuvwxyz tag=
  while ((n > 0)); do
    tag=${digits:n%36:1}$tag
    n=$((n / 36))
  done
  echo "${tag:-0}"
}
BENCH_TAG=${BENCH_TAG:-$(bench_tag $$)}
if [[ ! $BENCH_TAG =~ ^[0-9a-z]{1,5}$ ]]; then
  echo "error: BENCH_TAG '$BENCH_TAG' must be 1 to 5 lower-case letters or digits (it names the bench's interfaces)" >&2
  exit 2
fi
NS_S=fgbench-s-$BENCH_TAG
NS_T=fgbench-t-$BENCH_TAG
IF_S=fgbs$BENCH_TAG
IF_T=fgbt$BENCH_TAG
TARGET_IP=198.18.0.1
NFT_TABLE=fgbench$BENCH_TAG

# nsenter rather than 'ip netns exec': floodgate must see the host's bpffs for its pins
in_sender() { nsenter --net=/run/netns/"$NS_S" "$@"; }
in_target() { nsenter --net=/run/netns/"$NS_T" "$@"; }

veth_cleanup() {
  target_listener_off
  if [[ -e /run/netns/$NS_T ]]; then
    in_target "$FG" detach "$IF_T" >/dev/null 2>&1 || true
    in_target nft delete table netdev "$NFT_TABLE" 2>/dev/null || true
    in_target iptables -t raw -F PREROUTING 2>/dev/null || true
  fi
  rm -rf "/sys/fs/bpf/floodgate/$IF_T"
  ip netns del "$NS_S" 2>/dev/null || true
  ip netns del "$NS_T" 2>/dev/null || true
}

veth_create() {
  ip netns add "$NS_S"
  ip netns add "$NS_T"
  ip link add "$IF_S" numtxqueues 2 numrxqueues 2 netns "$NS_S" type veth \
    peer name "$IF_T" numtxqueues 2 numrxqueues 2 netns "$NS_T"
  local ns
  for ns in "$NS_S" "$NS_T"; do
    # IPv6 off: neighbour discovery would add packets no row sent
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
    ip -n "$ns" link set lo up
  done
  ip -n "$NS_T" addr add "$TARGET_IP/24" dev "$IF_T"
  ip -n "$NS_S" link set "$IF_S" up
  ip -n "$NS_T" link set "$IF_T" up
  # frames carry the target's own MAC, so the IP stack (iptables) takes them as its own
  TARGET_MAC=$(ip -n "$NS_T" -br link show "$IF_T" | awk '{print $3}')
}

# A veth statistic of the target summed over its queues: xdp_packets (frames handed to an
# XDP program) or xdp_drops (frames it dropped).
xdp_stat() {  # name
  ip netns exec "$NS_T" ethtool -S "$IF_T" |
    awk -v name="$1" '$1 ~ "^rx_queue_[0-9]+_" name ":$" {sum += $2} END {print sum + 0}'
}
xdp_arrivals() { xdp_stat xdp_packets; }
xdp_drops() { xdp_stat xdp_drops; }

# Packets floodgate counted on the target whose counter row matches a jq FILTER.
floodgate_packets() {  # filter
  in_target "$FG" stats "$IF_T" --json | jq "[.counters[] | select($1) | .packets] | add // 0"
}
floodgate_arrivals() { floodgate_packets true; }
floodgate_drops() { floodgate_packets '.verdict == "drop"'; }

# Packets the first (counting) rule of the nftables ingress chain saw; the second dropped.
nft_counter() {  # index
  in_target nft -j list table netdev "$NFT_TABLE" |
    jq "[.nftables[] | select(.rule) | .rule.expr[] | select(.counter) | .counter.packets][$1] // 0"
}
nft_arrivals() { nft_counter 0; }
nft_drops() { nft_counter 1; }

# Packets the first (counting) rule of iptables' raw PREROUTING saw; the second dropped.
iptables_counter() {  # line of the listing
  in_target iptables -t raw -L PREROUTING -v -x -n | awk -v line="$1" 'NR == line {print $1 + 0}'
}
iptables_arrivals() { iptables_counter 3; }
iptables_drops() { iptables_counter 4; }

# The sender runs on one CPU and the receiver's NAPI, in a kernel thread of its own, on
# another. Otherwise veth runs the receiver's XDP on the sender's CPU, inside the sender's
# call: every row then measures sender and receiver together, and the receiver never lets
# the sender's queue fill, so no row could tell which of the two was the bottleneck.
SENDER_CPU=0
RECEIVER_CPU=$(($(nproc) > 1 ? 1 : 0))
# The PIDs of the target's NAPI threads, by their name napi/<interface>-<id> (cut at 15
# characters). Read from /proc: pgrep warns of any pattern over 15 characters.
napi_threads() {
  local comm
  for comm in /proc/[0-9]*/comm; do
    [[ $(cat "$comm" 2>/dev/null) == "napi/$IF_T-"* ]] && echo "${comm//[^0-9]/}"
  done
  return 0
}
# After a receiver is on: a veth has NAPI only while it has an XDP program or GRO.
target_napi_threaded() {
  ip netns exec "$NS_T" sh -c "echo 1 > /sys/class/net/$IF_T/threaded"
  local pid
  for pid in $(napi_threads); do
    taskset -pc "$RECEIVER_CPU" "$pid" >/dev/null
  done
}

# CPU time the target's NAPI threads have run, in ns (their schedstat): the receiver's own
# work, whatever the sender's pace: the program, veth's part, and the stack for what passes.
receiver_cpu_ns() {
  local pid sum=0
  for pid in $(napi_threads); do
    sum=$((sum + $(cut -d' ' -f1 "/proc/$pid/schedstat")))
  done
  echo "$sum"
}

# GRO gives a veth NAPI without an XDP program, so it takes XDP_TX frames for the stack.
target_gro() { ip netns exec "$NS_T" ethtool -K "$IF_T" gro "$1"; }

receiver_xdp_drop_on() {
  ip -n "$NS_T" link set dev "$IF_T" xdpdrv obj "$DROP_OBJ" sec xdp
  target_napi_threaded
}
receiver_xdp_drop_off() { ip -n "$NS_T" link set dev "$IF_T" xdpdrv off; }
receiver_xdp_tx_on() {
  ip -n "$NS_T" link set dev "$IF_T" xdpdrv obj "$TX_OBJ" sec xdp
  target_napi_threaded
}
receiver_xdp_tx_off() { receiver_xdp_drop_off; }
# A veth takes the frames its peer sends back by XDP_TX only with NAPI (an XDP program): the
# sender drops the answers of the XDP_TX rows at its own end.
sender_xdp_drop_on() { ip -n "$NS_S" link set dev "$IF_S" xdpdrv obj "$DROP_OBJ" sec xdp; }
sender_xdp_drop_off() { ip -n "$NS_S" link set dev "$IF_S" xdpdrv off; }
# Frames the target's XDP program sent back (XDP_TX); it drops none.
xdp_tx_arrivals() { xdp_stat xdp_tx; }
xdp_tx_drops() { echo 0; }
# SYNs floodgate answered with a SYN cookie (XDP_TX), over its rules.
cookie_arrivals() {
  in_target "$FG" stats "$IF_T" --json | jq '[.rules[].sources.syn_cookies_sent] | add // 0'
}
cookie_drops() { echo 0; }

receiver_floodgate_on() {  # [attach flags...]
  in_target "$FG" attach "$IF_T" --rate "$LIMIT_PPS" --burst "$LIMIT_BURST" "$@" >/dev/null
  target_napi_threaded
}
receiver_floodgate_on_config() {  # config.yaml
  in_target "$FG" attach "$IF_T" --config "$1" >/dev/null
  target_napi_threaded
}
receiver_floodgate_off() { in_target "$FG" detach "$IF_T" >/dev/null; }

# A listening socket on the target at PORT: floodgate answers a SYN with a cookie only where a
# socket of the host listens for its destination (docs/config.md), as a real server would.
TARGET_LISTENER_PID=
target_listener_on() {  # port
  local i
  printf 'http:\n' >"$WORK/listener.yaml"
  nsenter --net=/run/netns/"$NS_T" "$HTTP_EXAMPLE" --config "$WORK/listener.yaml" \
    --listen "$TARGET_IP:$1" >"$WORK/listener.out" 2>&1 &
  TARGET_LISTENER_PID=$!
  for ((i = 0; i < 100; i++)); do
    grep -q '^listening on ' "$WORK/listener.out" && return 0
    kill -0 "$TARGET_LISTENER_PID" 2>/dev/null || break
    sleep 0.1
  done
  echo "error: the target's listener on port $1 did not start: $(head -c 500 "$WORK/listener.out")" >&2
  return 1
}
target_listener_off() {
  [[ -n $TARGET_LISTENER_PID ]] || return 0
  kill "$TARGET_LISTENER_PID" 2>/dev/null || true
  wait "$TARGET_LISTENER_PID" 2>/dev/null || true
  TARGET_LISTENER_PID=
}

# The same per-source limit as floodgate's, as an nftables meter at netdev ingress.
receiver_nft_on() {
  target_gro on
  in_target nft -f - <<NFT
table netdev $NFT_TABLE {
  chain ingress {
    type filter hook ingress device "$IF_T" priority -500; policy accept;
    counter
    meter sources size 1048576 { ip saddr limit rate over $LIMIT_PPS/second burst $LIMIT_BURST packets } counter drop
  }
}
NFT
  target_napi_threaded
}
receiver_nft_off() {
  in_target nft delete table netdev "$NFT_TABLE"
  target_gro off
}

# The same limit as iptables hashlimit per source address, in the raw table (before conntrack).
receiver_iptables_on() {
  target_gro on
  in_target iptables -t raw -A PREROUTING -i "$IF_T"
  in_target iptables -t raw -A PREROUTING -i "$IF_T" -m hashlimit --hashlimit-name "fgb$BENCH_TAG" \
    --hashlimit-mode srcip --hashlimit-above "$LIMIT_PPS/second" --hashlimit-burst "$LIMIT_BURST" \
    --hashlimit-htable-size 1048576 --hashlimit-htable-max 1048576 -j DROP
  target_napi_threaded
}
receiver_iptables_off() {
  in_target iptables -t raw -F PREROUTING
  target_gro off
}

# Floods for FLOOD_SECONDS from SOURCES distinct sources; sets FLOOD_JSON to the report.
# With COUNT it also stops after COUNT frames (a spoofed flood sends each source once: a
# fast sender would otherwise come round to sources it sent long ago, whose buckets are
# full again). The duration bounds the loop; timeout bounds it again should it hang.
FLOOD_ARGS=()  # more flags of floodgate flood (protocol, port), for the rows that set them
run_flood() {  # sources [count]
  local count=()
  [[ -n ${2:-} ]] && count=(--count "$2")
  # shellcheck disable=SC2034  # the sourcing scripts read it
  FLOOD_JSON=$(in_sender timeout $((FLOOD_SECONDS + 60)) "$FG" flood "$IF_S" --dst "$TARGET_IP" \
    --dst-mac "$TARGET_MAC" --sources "$1" --duration "${FLOOD_SECONDS}s" "${count[@]}" \
    "${FLOOD_ARGS[@]}" \
    --cpu "$SENDER_CPU" --json)
}
