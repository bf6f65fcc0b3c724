# SPDX-License-Identifier: MIT
# The flood rows of scripts/bench.sh: one flood measured at the receiver, and the row made of
# FLOOD_ROUNDS of them. Sourced after bench_veth.sh and bench_report.sh.

# Floods of each row: the row is the median one.
FLOOD_ROUNDS=3

# Floods once from SOURCES sources and prints what the receiver counted: its rate in Mpps,
# the frames that arrived and those it dropped, its CPU time per frame in ns (see
# receiver_cpu_ns), and the sender's report (one line of JSON). COUNTERS names the
# receiver's counters (X for X_arrivals, X_drops).
flood_round() {  # counters sources [count]
  set -e  # run in a command substitution, which bash runs without it
  local counters=$1 before dropped_before after dropped_after seconds cpu_before cpu_after
  before=$("${counters}_arrivals")
  dropped_before=$("${counters}_drops")
  cpu_before=$(receiver_cpu_ns)
  run_flood "$2" "${3:-}"
  sleep 0.2  # let the receiver's queue drain into its counters
  cpu_after=$(receiver_cpu_ns)
  after=$("${counters}_arrivals")
  dropped_after=$("${counters}_drops")
  seconds=$(jq .seconds <<<"$FLOOD_JSON")
  awk -v n=$((after - before)) -v d=$((dropped_after - dropped_before)) -v s="$seconds" \
    -v cpu=$((cpu_after - cpu_before)) 'BEGIN { printf "%.3f %d %d %.0f ", n / s / 1e6, n, d, n ? cpu / n : 0 }'
  jq -c . <<<"$FLOOD_JSON"
}

# The median line of its arguments, each a line that starts with a number: the middle one by
# that number of an odd count, the upper middle of an even one. (Not `median`: bench_http.sh's
# takes numbers on stdin, and the one sourced last would serve both.)
median_line() { printf '%s\n' "$@" | sort -n -k1,1 | sed -n "$((($# + 1) / 2))p"; }

# Stops the bench when a round's receiver counted nothing: a broken row, not a figure.
check_arrivals() {  # row-name counters arrived flood-json
  ((${3} > 0)) && return 0
  echo "error: row '$1': the receiver counted no frame of the $(jq .sent <<<"$4") sent;" \
    "check that its program is attached and the row's counters ($2) read the right thing" >&2
  exit 1
}

# Whether the sender was the bottleneck of a flood: the receiver took nearly every frame sent
# (its veth queue was full for under 1% of them), so it could have handled more.
sender_bound() {  # flood-json
  awk -v q="$(jq .peer_queue_full <<<"$1")" -v n="$(jq .sent <<<"$1")" 'BEGIN { exit !(q < 0.01 * n) }'
}

# Floods and records one row: the receiver's own count of arrivals per second, and the share
# it dropped (what passes goes on into the kernel's stack, which costs far more than a drop).
# The rate sent stands next to the rate handled. A sender-bound row says so and gives no
# ratio. Each row is the median of FLOOD_ROUNDS floods (the round whose rate is the median
# one), whose report it leaves in FLOOD_JSON.
flood_row() {  # name sources counters baseline detail [count]
  local name=$1 sources=$2 counters=$3 baseline=$4 detail=$5 count=${6:-}
  local mpps arrived dropped cpu_ns seconds sent_mpps bound=
  local round rounds=() middle
  for ((round = 0; round < FLOOD_ROUNDS; round++)); do
    rounds+=("$(flood_round "$counters" "$sources" "$count")")
    read -r _ arrived _ _ FLOOD_JSON <<<"${rounds[round]}"
    check_arrivals "$name" "$counters" "$arrived" "$FLOOD_JSON"
  done
  middle=$(median_line "${rounds[@]}")
  read -r mpps arrived dropped cpu_ns FLOOD_JSON <<<"$middle"
  seconds=$(jq .seconds <<<"$FLOOD_JSON")
  sent_mpps=$(awk -v n="$(jq .sent <<<"$FLOOD_JSON")" -v s="$seconds" 'BEGIN { printf "%.3f", n / s / 1e6 }')
  if sender_bound "$FLOOD_JSON"; then
    bound=sender
    detail="sender-bound: it handled all $sent_mpps Mpps sent, so it can handle more; $detail"
  fi
  detail+="; sent $sent_mpps Mpps, handled $mpps Mpps"
  detail+=" ($(awk -v d="$dropped" -v n="$arrived" 'BEGIN { printf "%.0f", n ? 100 * d / n : 0 }')% dropped)"
  detail+=", peer queue full for $(jq .peer_queue_full <<<"$FLOOD_JSON"); receiver CPU $cpu_ns ns/packet"
  add_row "flood" "$name" "$mpps" "Mpps" "$baseline" "$detail" "$bound"
  echo "    $name: sent $sent_mpps Mpps, $mpps Mpps arrived${bound:+ (sender-bound)} (median of: ${rounds[*]%% *})"
}

# Paired rounds: in each round the baseline receiver is flooded and then the candidate, the
# same frames a few seconds apart, and the row is the median of the rounds' ratios. A shared
# VM's speed can swing several times over within minutes (one run measured a bare XDP_DROP
# at 2.2 and 8.8 Mpps a minute apart), while a flood_row takes its baseline minutes before
# the rows compared with it: the ratio of two floods of the same round is the figure that
# holds. Each receiver is put on and taken off by a function named in the arguments.
#
# Each pair gives two rows: the rates handled (group "paired"), and the receiver's CPU time
# per packet (group "paired_cpu", the baseline's over the candidate's: the packets the
# candidate handles on a CPU for each one of the baseline's). The second holds where the
# first cannot: a receiver that keeps up with its sender idles between frames, and the sender
# then pays for waking it (a cross-CPU wakeup, dear in a VM), so a baseline faster than its
# sender can show a lower rate than a slower program that keeps its queue full.
PAIRED_BASELINE="the baseline, same round"
paired_rows_start() {
  add_row "paired" "$PAIRED_BASELINE" "1" "x baseline" "" \
    "each row's own baseline, flooded just before it in every round"
  add_row "paired_cpu" "$PAIRED_BASELINE" "1" "x baseline" "" \
    "the baseline's receiver CPU per packet over the row's, same round"
}
paired_row() {  # name sources baseline-on baseline-off baseline-counters candidate-on candidate-off candidate-counters detail
  local name=$1 sources=$2 base_on=$3 base_off=$4 base_counters=$5
  local cand_on=$6 cand_off=$7 cand_counters=$8 detail=$9
  local round base cand base_mpps cand_mpps base_cpu cand_cpu arrived json ratio bound=
  local ratios=() figures=() cpu_figures=() cpu_ratios=() cpu_ratio base_bound=0
  for ((round = 0; round < FLOOD_ROUNDS; round++)); do
    "$base_on"
    base=$(flood_round "$base_counters" "$sources")
    "$base_off"
    "$cand_on"
    cand=$(flood_round "$cand_counters" "$sources")
    "$cand_off"
    read -r base_mpps arrived _ base_cpu json <<<"$base"
    check_arrivals "$name (baseline)" "$base_counters" "$arrived" "$json"
    sender_bound "$json" && base_bound=$((base_bound + 1))
    read -r cand_mpps arrived _ cand_cpu json <<<"$cand"
    check_arrivals "$name" "$cand_counters" "$arrived" "$json"
    if ((base_cpu == 0 || cand_cpu == 0)); then
      echo "error: row '$name': no receiver CPU time was read (no NAPI thread of $IF_T?)" >&2
      exit 1
    fi
    ratios+=("$(awk -v c="$cand_mpps" -v b="$base_mpps" 'BEGIN { printf "%.3f", c / b }')")
    figures+=("$cand_mpps/$base_mpps")
    cpu_figures+=("$cand_cpu/$base_cpu")
    cpu_ratios+=("$(awk -v c="$cand_cpu" -v b="$base_cpu" 'BEGIN { printf "%.3f", b / c }')")
  done
  ratio=$(median_line "${ratios[@]}")
  cpu_ratio=$(median_line "${cpu_ratios[@]}")
  # a baseline that took all its sender sent, in most rounds, was not measured: no ratio
  if ((2 * base_bound > FLOOD_ROUNDS)); then
    bound=sender
    detail="sender-bound: the baseline handled all that was sent; $detail"
  fi
  add_row "paired" "$name" "$ratio" "x baseline" "$PAIRED_BASELINE" \
    "$detail; median of the rounds' ratios; rounds, Mpps: ${figures[*]}" "$bound"
  add_row "paired_cpu" "$name" "$cpu_ratio" "x baseline" "$PAIRED_BASELINE" \
    "$detail; median of the rounds' ratios; rounds, receiver ns/packet: ${cpu_figures[*]}"
  echo "    $name: rate ${ratio}x${bound:+ (sender-bound)}, receiver CPU ${cpu_ratio}x" \
    "(rounds, Mpps: ${figures[*]}; ns/packet: ${cpu_figures[*]})"
}
