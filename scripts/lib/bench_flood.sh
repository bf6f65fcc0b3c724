# SPDX-License-Identifier: MIT
# The flood rows of scripts/bench.sh: one flood measured at the receiver, and the row made of
# FLOOD_ROUNDS of them. Sourced after bench_veth.sh and bench_report.sh.

# Floods of each row: the row is the median one.
FLOOD_ROUNDS=3

# Floods once from SOURCES sources and prints what the receiver counted: its rate in Mpps,
# the frames that arrived and those it dropped, and the sender's report (one line of JSON).
# COUNTERS names the receiver's counters (X for X_arrivals, X_drops).
flood_round() {  # counters sources [count]
  local counters=$1 before dropped_before after dropped_after seconds
  before=$("${counters}_arrivals")
  dropped_before=$("${counters}_drops")
  run_flood "$2" "${3:-}"
  sleep 0.2  # let the receiver's queue drain into its counters
  after=$("${counters}_arrivals")
  dropped_after=$("${counters}_drops")
  seconds=$(jq .seconds <<<"$FLOOD_JSON")
  awk -v n=$((after - before)) -v s="$seconds" 'BEGIN { printf "%.3f ", n / s / 1e6 }'
  echo "$((after - before)) $((dropped_after - dropped_before)) $(jq -c . <<<"$FLOOD_JSON")"
}

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
  local mpps arrived dropped seconds sent_mpps bound=
  local round rounds=() median
  for ((round = 0; round < FLOOD_ROUNDS; round++)); do
    rounds+=("$(flood_round "$counters" "$sources" "$count")")
  done
  median=$(printf '%s\n' "${rounds[@]}" | sort -n -k1,1 | sed -n "$(((FLOOD_ROUNDS + 1) / 2))p")
  read -r mpps arrived dropped FLOOD_JSON <<<"$median"
  check_arrivals "$name" "$counters" "$arrived" "$FLOOD_JSON"
  seconds=$(jq .seconds <<<"$FLOOD_JSON")
  sent_mpps=$(awk -v n="$(jq .sent <<<"$FLOOD_JSON")" -v s="$seconds" 'BEGIN { printf "%.3f", n / s / 1e6 }')
  if sender_bound "$FLOOD_JSON"; then
    bound=sender
    detail="sender-bound: it handled all $sent_mpps Mpps sent, so it can handle more; $detail"
  fi
  detail+="; sent $sent_mpps Mpps, handled $mpps Mpps"
  detail+=" ($(awk -v d="$dropped" -v n="$arrived" 'BEGIN { printf "%.0f", n ? 100 * d / n : 0 }')% dropped)"
  detail+=", peer queue full for $(jq .peer_queue_full <<<"$FLOOD_JSON")"
  add_row "flood" "$name" "$mpps" "Mpps" "$baseline" "$detail" "$bound"
  echo "    $name: sent $sent_mpps Mpps, $mpps Mpps arrived${bound:+ (sender-bound)} (median of: ${rounds[*]%% *})"
}

