# SPDX-License-Identifier: MIT
# The HTTP rows of scripts/bench.sh: floodgate-http-example on loopback under wrk, one service
# per row (no policies, three policies in the memory store, the same three in Redis, and a
# hot key over its limit), and the floor of a Redis store (floodgate_bench_http_floor: the same
# route with no limiter, then with one Redis PING per request), measured in rounds that take turns, so that a machine busy with
# something else for a while weighs on every row alike. wrk, the services and redis-server
# run at nice -20, so that other work on the machine disturbs them less; it still does, so
# the load average before the rows is kept (HTTP_LOADAVG, in the results' meta). Sourced;
# expects HTTP_EXAMPLE, HTTP_FLOOR, BENCH_REDIS, WORK, HTTP_SECONDS, HTTP_ROUNDS and FLOODGATE_ROOT set.

HTTP_CONNECTIONS=8
HTTP_PIDS=()
REDIS_PID=

http_cleanup() {
  local pid
  for pid in "${HTTP_PIDS[@]}" $REDIS_PID; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  HTTP_PIDS=()
  REDIS_PID=
}

# Three policies every request meets, each keyed and counted its own way: per client address
# (GCRA), per API key (token bucket) and per user (sliding window counter). Their limits admit
# all wrk can send, but for the per-key one with OVER=1: one request, then a 429 for the rest
# of the run (a hot key over its limit).
http_policies_config() {  # file store-yaml over
  local key_limit="capacity: 1000000, rate_per_s: 1000000"
  (($3)) && key_limit="capacity: 1, rate_per_s: 0.001"
  cat >"$1" <<YAML
http:
  store: $2
  policies:
    - {name: per-ip, key: ip, algorithm: gcra, capacity: 1000000, rate_per_s: 1000000}
    - {name: per-key, key: "header:X-API-Key", algorithm: token_bucket, $key_limit}
    - {name: per-user, key: user, algorithm: sliding_window_counter, limit: 1000000,
       window_ms: 1000}
YAML
}

# Runs COMMAND... in the background at nice -20, its output to FILE, until a line of it
# matches PATTERN (10 s at most); sets STARTED_PID and STARTED_LINE.
start_and_wait() {  # file pattern command...
  local out=$1 pattern=$2 i
  : >"$out"
  shift 2
  nice -n -20 "$@" >"$out" 2>&1 &
  STARTED_PID=$!
  for ((i = 0; i < 100; i++)); do
    STARTED_LINE=$(grep -m1 "$pattern" "$out" || true)
    [[ -n $STARTED_LINE ]] && return 0
    kill -0 "$STARTED_PID" 2>/dev/null || break
    sleep 0.1
  done
  echo "error: $1 did not start: $(head -c 500 "$out")" >&2
  return 1
}

# CPU time a process has used so far, in clock ticks (user + system).
cpu_ticks() {  # pid
  sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}

# CPU time the redis-server at REDIS_ADDRESS has used so far, in µs (its INFO cpu).
redis_cpu_us() {
  redis-cli -h "${REDIS_ADDRESS%:*}" -p "${REDIS_ADDRESS##*:}" info cpu |
    awk -F: '/^used_cpu_(sys|user):/ { s += $2 } END { printf "%.0f\n", s * 1e6 }'
}

# One wrk run of SECONDS on PORT, keep-alive on HTTP_CONNECTIONS connections from one thread;
# prints "requests seconds p99_us non_2xx socket_errors" (scripts/lib/bench_wrk.lua).
run_wrk() {  # port seconds
  nice -n -20 wrk -t1 -c"$HTTP_CONNECTIONS" -d"$2"s -s "$FLOODGATE_ROOT/scripts/lib/bench_wrk.lua" \
    -H 'X-API-Key: bench' -H 'X-User: bench' "http://127.0.0.1:$1/api/items" |
    awk -F'\t' '$1 == "wrk-report" { print $2, $3, $4, $5, $6 }'
}

# The median of the numbers on stdin.
median() {
  sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# Measures every row in HTTP_ROUNDS rounds of one wrk run each and adds two rows per row:
# requests/s and p99 latency, each the median of its rounds. The details say what the
# service's process (and for Redis, redis-server's) spent in CPU per request, which a busy
# machine disturbs far less than it does requests/s.
http_rows() {
  local names=(none memory redis over floor floor-ping floor-own) name round
  HTTP_LOADAVG=$(cut -d' ' -f1-3 /proc/loadavg)
  echo "    load average before the rows: $HTTP_LOADAVG"
  declare -A row_label=(
    [none]="no policies"
    [memory]="memory: 3 policies"
    [redis]="redis: 3 policies"
    [over]="memory: hot key over its limit"
    [floor]="floor: the route alone"
    [floor-ping]="floor: one Redis PING a request"
    [floor-own]="floor: one PING a request, a connection a thread"
  )
  start_and_wait "$WORK/redis.out" '^redis ' "$BENCH_REDIS"
  REDIS_PID=$STARTED_PID
  REDIS_ADDRESS=${STARTED_LINE#redis }
  printf 'http:\n' >"$WORK/http-none.yaml"
  http_policies_config "$WORK/http-memory.yaml" "{type: memory}" 0
  http_policies_config "$WORK/http-redis.yaml" "{type: redis, address: $REDIS_ADDRESS}" 0
  http_policies_config "$WORK/http-over.yaml" "{type: memory}" 1
  declare -A port pid
  for name in "${names[@]}"; do
    case $name in
      floor) start_and_wait "$WORK/http-$name.out" '^listening on ' "$HTTP_FLOOR" ;;
      floor-ping) start_and_wait "$WORK/http-$name.out" '^listening on ' "$HTTP_FLOOR" \
        --redis "$REDIS_ADDRESS" ;;
      floor-own) start_and_wait "$WORK/http-$name.out" '^listening on ' "$HTTP_FLOOR" \
        --redis "$REDIS_ADDRESS" --own-connections ;;
      *) start_and_wait "$WORK/http-$name.out" '^listening on ' \
        "$HTTP_EXAMPLE" --config "$WORK/http-$name.yaml" --listen 127.0.0.1:0 ;;
    esac
    pid[$name]=$STARTED_PID
    HTTP_PIDS+=("$STARTED_PID")
    port[$name]=${STARTED_LINE##*:}
    run_wrk "${port[$name]}" 1 >/dev/null  # warm up: connections, the store's keys, functions
  done
  local ticks redis_us result
  for ((round = 0; round < HTTP_ROUNDS; round++)); do
    for name in "${names[@]}"; do
      ticks=$(cpu_ticks "${pid[$name]}")
      [[ $name == redis || $name == floor-* ]] && redis_us=$(redis_cpu_us)
      result=$(run_wrk "${port[$name]}" "$HTTP_SECONDS")
      ticks=$(($(cpu_ticks "${pid[$name]}") - ticks))
      if [[ $name == redis || $name == floor-* ]]; then
        redis_us=$(($(redis_cpu_us) - redis_us))
      else
        redis_us=0
      fi
      echo "$result $ticks $redis_us" >>"$WORK/wrk-$name.txt"
    done
  done
  http_cleanup

  local hz requests rps p99 non_2xx errors detail admitted_rps base
  hz=$(getconf CLK_TCK)
  admitted_rps=$(awk '{ printf "%.3f\n", $1 / $2 / 1e3 }' "$WORK/wrk-memory.txt" | median)
  for name in "${names[@]}"; do
    read -r requests non_2xx errors < <(awk '{ n += $1; s += $4; e += $5 } END { print n, s, e }' \
      "$WORK/wrk-$name.txt")
    rps=$(awk '{ printf "%.3f\n", $1 / $2 / 1e3 }' "$WORK/wrk-$name.txt" | median)
    p99=$(awk '{ printf "%.3f\n", $3 / 1e3 }' "$WORK/wrk-$name.txt" | median)
    case $name in
      none) detail="the example service, no policy" ;;
      memory) detail="per IP (gcra), per API key (token bucket), per user (sliding window counter)" ;;
      redis) detail="the same 3 in a private redis-server on loopback, one round trip, one FCALL" ;;
      over) detail="the same 3, the API key over its limit; $(awk -v a="$rps" -v b="$admitted_rps" \
        'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')x the admitted requests/s" ;;
      floor) detail="floodgate_bench_http_floor: the example's route, no limiter, no metrics" ;;
      floor-ping) detail="the same route, one PING through floodgate's Redis client per request: \
the most a store that asks Redis on every request can keep of its baseline" ;;
      floor-own) detail="the same PING on a connection of each server thread's own (no round \
trips shared)" ;;
    esac
    # the example answers 429 when a policy refuses; the floor 503 when a PING fails
    if [[ $name == floor* ]]; then
      detail+="; $non_2xx of $requests answered 503 (PING failed)"
    else
      detail+="; $non_2xx of $requests answered 429"
    fi
    ((errors == 0)) || detail+=", $errors socket errors"
    detail+="; service CPU $(awk -v hz="$hz" -v n="$requests" '{ t += $6 } END {
      printf "%.1f", t / hz * 1e6 / n }' "$WORK/wrk-$name.txt") us/request"
    [[ $name == redis || $name == floor-* ]] && detail+=", redis-server $(awk -v n="$requests" '{ t += $7 } END {
      printf "%.1f", t / n }' "$WORK/wrk-$name.txt") us/request"
    detail+="; median of $HTTP_ROUNDS x ${HTTP_SECONDS}s"
    case $name in
      none | floor) base="" ;;
      floor-*) base=${row_label[floor]} ;;
      *) base=${row_label[none]} ;;
    esac
    add_row "http" "${row_label[$name]}" "$rps" "k requests/s" "$base" "$detail"
    add_row "http p99" "${row_label[$name]}" "$p99" "ms" "$base" \
      "p99 latency, wrk -c$HTTP_CONNECTIONS keep-alive connections, median of $HTTP_ROUNDS"
    echo "    ${row_label[$name]}: ${rps}k requests/s, p99 ${p99} ms"
  done
}
