-- SPDX-License-Identifier: MIT
-- wrk's report for scripts/lib/bench_http.sh, one tab-separated line: "wrk-report", requests,
-- seconds, p99 latency in µs, responses not 2xx/3xx, socket errors. Only done() is defined,
-- so wrk keeps its fast path: no Lua runs per request.
done = function(summary, latency, requests)
  local errors = summary.errors
  io.write(string.format("wrk-report\t%d\t%.6f\t%d\t%d\t%d\n", summary.requests,
    summary.duration / 1e6, latency:percentile(99), errors.status,
    errors.connect + errors.read + errors.write + errors.timeout))
end
