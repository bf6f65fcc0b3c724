// SPDX-License-Identifier: MIT
// Google Benchmark of the Redis store against a private redis-server: decisions per second
// per connection, with and without pipelining, as ratios to redis-benchmark's own EVALSHA
// rate on the same server; and the round trips hot-key prefetch saves at batch 1, 8, 64,
// with the over-admission measured (it must be zero); and the round trips local buckets
// reconciled every 200 ms make, with their over-admission.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "floodgate/redis/prefetch_store.h"
#include "floodgate/redis/redis_store.h"
#include "floodgate/redis/scripts.h"
#include "floodgate/redis/sync_store.h"
#include "redis/redis_server.h"

namespace {

using namespace floodgate::http;

testing::RedisServer* server = nullptr;
double baseline_rps = 0;            // redis-benchmark, 1 connection, EVALSHA of our script
double baseline_pipelined_rps = 0;  // the same with -P 64

AlgorithmParams gcra() {
  AlgorithmParams p;
  p.kind = AlgorithmKind::kGcra;
  p.capacity = 1'000'000;
  p.rate_per_s = 1e6;
  return p;
}

std::shared_ptr<redis::Client> oneConnection() {
  redis::ClientOptions options;
  options.seeds = {server->address()};
  options.timeout_ms = 1000;
  options.pool_size = 1;
  return std::make_shared<redis::Client>(options);
}

// redis-benchmark's rate for EVALSHA of the GCRA script on one key, `pipeline` deep.
double redisBenchmarkRate(int pipeline) {
  std::string command = "redis-benchmark -p " + std::to_string(server->port()) +
                        " -c 1 -n 100000 -P " + std::to_string(pipeline) + " -q EVALSHA " +
                        redis::decideScript(AlgorithmKind::kGcra).sha1 +
                        " 1 'fg:{bench:k}:gcra' '' 1 0 1000000 1000000000 1 gcra 2>/dev/null";
  FILE* out = popen(command.c_str(), "r");
  if (out == nullptr) return 0;
  // The whole output first: its progress updates are separated by \r, not \n, so a line
  // can be longer than any buffer, and the result may straddle two reads.
  std::string text;
  char chunk[4096];
  size_t n = 0;
  while ((n = fread(chunk, 1, sizeof(chunk), out)) > 0) text.append(chunk, n);
  double rps = 0;
  // "...: 41152.26 requests per second, p50=..."
  size_t at = text.rfind(" requests per second");
  if (at != std::string::npos) {
    size_t start = text.rfind(' ', at - 1);
    rps = std::stod(text.substr(start + 1, at - start - 1));
  }
  pclose(out);
  return rps;
}

void BM_DecideOneByOne(benchmark::State& state) {
  RedisStore store(oneConnection(), "bench", gcra());
  int64_t admitted = 0;
  for (auto _ : state) admitted += store.decide("k", 0, 1)->allowed();
  benchmark::DoNotOptimize(admitted);
  state.SetItemsProcessed(state.iterations());
  state.counters["vs_redis_benchmark"] = benchmark::Counter(
      static_cast<double>(state.iterations()) / baseline_rps, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_DecideOneByOne)->UseRealTime();

void BM_DecidePipelined(benchmark::State& state) {
  RedisStore store(oneConnection(), "bench", gcra());
  std::vector<RedisStore::Request> batch;
  for (int i = 0; i < state.range(0); ++i) batch.push_back({"k" + std::to_string(i % 16), 1, 0});
  for (auto _ : state) benchmark::DoNotOptimize(store.decideMany(batch, 0));
  int64_t decisions = state.iterations() * state.range(0);
  state.SetItemsProcessed(decisions);
  state.counters["vs_redis_benchmark"] = benchmark::Counter(
      static_cast<double>(decisions) / baseline_rps, benchmark::Counter::kIsRate);
  state.counters["vs_redis_benchmark_P64"] = benchmark::Counter(
      static_cast<double>(decisions) / baseline_pipelined_rps, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_DecidePipelined)->Arg(8)->Arg(64)->UseRealTime();

// Four instances share one hot key (fixed window, 1000 per 10 s window) and take turns
// deciding at evenly spaced virtual times: range(1) percent of the limit arrives per
// window (90: under the limit, so every rejection is a false one; 500: five times over).
// Counts round trips per decision and, per window, admitted units over the limit.
// Virtual time runs ~20x faster than real time here, so Redis's (real-time) key expiry
// never ends a window early.
void BM_PrefetchFleet(benchmark::State& state) {
  const int64_t batch = state.range(0);
  AlgorithmParams p;
  p.kind = AlgorithmKind::kFixedWindow;
  p.limit = 1000;
  p.window_ms = 10'000;
  const int64_t window_ns = p.window_ms * 1'000'000;
  RedisStoreOptions virtual_time;
  virtual_time.virtual_time = true;  // one timeline for the fleet, so windows can be audited
  std::vector<std::shared_ptr<redis::Client>> clients;
  std::vector<std::unique_ptr<PrefetchStore>> fleet;
  static int run = 0;
  std::string policy = "prefetch" + std::to_string(++run);  // fresh keys each run
  for (int i = 0; i < 4; ++i) {
    clients.push_back(oneConnection());
    PrefetchOptions options;
    options.batch = batch;
    options.hot_keys = {"k"};
    fleet.push_back(std::make_unique<PrefetchStore>(
        std::make_unique<RedisStore>(clients.back(), policy, p, virtual_time), p.kind, options));
  }
  std::map<int64_t, int64_t> admitted_in_window;
  int64_t now_ns = 1'000'000'000'000;
  const int64_t step_ns = window_ns * 100 / (p.limit * state.range(1));
  int64_t decisions = 0;
  int64_t rejected = 0;
  for (auto _ : state) {
    now_ns += step_ns;
    auto d = fleet[decisions % 4]->decide("k", now_ns, 1);
    if (d && d->allowed()) {
      ++admitted_in_window[now_ns / window_ns];
    } else {
      ++rejected;
    }
    ++decisions;
  }
  int64_t trips = 0;
  for (auto& c : clients) trips += c->roundTrips();
  int64_t over = 0;
  int64_t admitted = 0;
  for (auto& [window, count] : admitted_in_window) {
    over += std::max<int64_t>(0, count - p.limit);
    admitted += count;
  }
  state.SetItemsProcessed(decisions);
  state.counters["round_trips_per_decision"] = static_cast<double>(trips) / decisions;
  state.counters["over_admitted"] = static_cast<double>(over);
  state.counters["rejected_pct"] = 100.0 * static_cast<double>(rejected) / decisions;
  state.counters["admitted_per_window"] =
      static_cast<double>(admitted) / std::max<size_t>(1, admitted_in_window.size());
}
BENCHMARK(BM_PrefetchFleet)
    ->ArgsProduct({{1, 8, 64}, {90, 500}})
    ->ArgNames({"batch", "load_pct"})
    ->Iterations(20'000)
    ->UseRealTime();

// The same fleet and load with local buckets (SyncStore) reconciled every 200 ms of
// virtual time: every decision local, one round trip per instance per sync (and one per
// window for the key's first share there). Counts round trips per decision and, per window,
// admitted units over the limit (bounded by limit + N - 1; see sync_store.h).
void BM_SyncFleet(benchmark::State& state) {
  AlgorithmParams p;
  p.kind = AlgorithmKind::kFixedWindow;
  p.limit = 1000;
  p.window_ms = 10'000;
  const int64_t window_ns = p.window_ms * 1'000'000;
  const int64_t interval_ns = 200'000'000;
  RedisStoreOptions virtual_time;
  virtual_time.virtual_time = true;
  auto clock = std::make_shared<ManualClock>(1'000'000'000'000);
  auto breaker = std::make_shared<CircuitBreaker>(CircuitBreakerOptions{}, clock);
  std::vector<std::shared_ptr<redis::Client>> clients;
  std::vector<std::unique_ptr<SyncStore>> fleet;
  static int run = 0;
  std::string policy = "sync" + std::to_string(++run);
  for (int i = 0; i < 4; ++i) {
    clients.push_back(oneConnection());
    fleet.push_back(std::make_unique<SyncStore>(
        std::make_unique<RedisStore>(clients.back(), policy, p, virtual_time), [] { return 4; },
        breaker, clock, SyncOptions{200, 1000, /*background=*/false}));
  }
  std::map<int64_t, int64_t> admitted_in_window;
  const int64_t step_ns = window_ns * 100 / (p.limit * state.range(0));
  int64_t decisions = 0;
  int64_t next_sync_ns = clock->nowNs() + interval_ns;
  for (auto _ : state) {
    clock->advanceNs(step_ns);
    if (clock->nowNs() >= next_sync_ns) {
      for (auto& store : fleet) (void)store->syncNow();
      next_sync_ns += interval_ns;
    }
    auto d = fleet[decisions % 4]->decide("k", clock->nowNs(), 1);
    if (d && d->allowed()) ++admitted_in_window[clock->nowNs() / window_ns];
    ++decisions;
  }
  int64_t trips = 0;
  for (auto& c : clients) trips += c->roundTrips();
  int64_t over = 0;
  for (auto& [window, count] : admitted_in_window) over += std::max<int64_t>(0, count - p.limit);
  state.SetItemsProcessed(decisions);
  state.counters["round_trips_per_decision"] = static_cast<double>(trips) / decisions;
  state.counters["over_admitted"] = static_cast<double>(over);
}
BENCHMARK(BM_SyncFleet)
    ->ArgsProduct({{90, 500}})
    ->ArgNames({"load_pct"})
    ->Iterations(20'000)
    ->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  auto owned = testing::RedisServer::start();
  if (!owned) {
    std::fprintf(stderr, "cannot start redis-server (is it installed?)\n");
    return 1;
  }
  server = owned.get();
  // Load the script so redis-benchmark's EVALSHA finds it (the store itself calls the
  // function library, which leaves the script cache empty).
  auto loaded = server->command({"SCRIPT", "LOAD", redis::decideScript(AlgorithmKind::kGcra).body});
  if (!loaded || loaded->isError()) {
    std::fprintf(stderr, "cannot load the GCRA script into redis-server\n");
    return 1;
  }
  baseline_rps = redisBenchmarkRate(1);
  baseline_pipelined_rps = redisBenchmarkRate(64);
  std::printf("baseline: redis-benchmark EVALSHA, 1 connection: %.0f/s; with -P 64: %.0f/s\n",
              baseline_rps, baseline_pipelined_rps);
  if (baseline_rps <= 0 || baseline_pipelined_rps <= 0) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
