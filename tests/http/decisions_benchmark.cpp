// SPDX-License-Identifier: MIT
// Google Benchmark of in-memory decisions: one hot key, a million keys, threads; state sizes.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "floodgate/core/clock.h"
#include "floodgate/core/keyed_hash.h"
#include "floodgate/stores/memory_store.h"

namespace {

using namespace floodgate::http;

std::shared_ptr<const Algorithm> algorithmFor(AlgorithmKind kind) {
  AlgorithmParams p;
  p.kind = kind;
  p.limit = 1000;
  p.window_ms = 1000;
  p.capacity = 1000;
  p.rate_per_s = 1000;
  return *makeAlgorithm(p);
}

// One key, virtual time advancing 1 µs per decision (about 1000 admitted per second).
void BM_HotKey(benchmark::State& state) {
  static std::unique_ptr<MemoryStore> store;
  auto kind = static_cast<AlgorithmKind>(state.range(0));
  if (state.thread_index() == 0)
    store = std::make_unique<MemoryStore>(algorithmFor(kind), MemoryStoreOptions{});
  int64_t now_ns = 1'000'000'000;
  int64_t admitted = 0;
  for (auto _ : state) {
    now_ns += 1000;
    admitted += store->decide("api-key-0123456789", now_ns, 1)->allowed();
  }
  benchmark::DoNotOptimize(admitted);
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(std::string(algorithmName(kind)));
}

// The same with the time read from a real clock, as in production.
template <class ClockType>
void BM_HotKeyRealClock(benchmark::State& state) {
  static std::unique_ptr<MemoryStore> store;
  auto kind = static_cast<AlgorithmKind>(state.range(0));
  if (state.thread_index() == 0)
    store = std::make_unique<MemoryStore>(algorithmFor(kind), MemoryStoreOptions{});
  ClockType clock;
  int64_t admitted = 0;
  for (auto _ : state) {
    admitted += store->decide("api-key-0123456789", clock.nowNs(), 1)->allowed();
  }
  benchmark::DoNotOptimize(admitted);
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(std::string(algorithmName(kind)));
}

// Many keys (range 1) visited in a shuffled order; each thread starts at its own offset.
// With `kLookAhead` > 0 the caller prefetches the key it will decide that many decisions
// later, as a server with a queue of requests (or a request under several policies) can.
template <size_t kLookAhead>
void BM_ManyKeys(benchmark::State& state) {
  static std::vector<std::string> keys;
  static std::unique_ptr<MemoryStore> store;
  auto kind = static_cast<AlgorithmKind>(state.range(0));
  const size_t kKeys = static_cast<size_t>(state.range(1));
  if (state.thread_index() == 0) {
    if (keys.size() != kKeys) {
      keys.clear();
      keys.reserve(kKeys);
      for (size_t i = 0; i < kKeys; ++i) keys.push_back("203.0." + std::to_string(i));
      std::shuffle(keys.begin(), keys.end(), std::mt19937_64(42));
    }
    store = std::make_unique<MemoryStore>(algorithmFor(kind),
                                          MemoryStoreOptions{.max_keys = 2'000'000, .shards = 64});
    for (const std::string& key : keys) (void)store->decide(key, 1, 1);  // warm: all present
  }
  size_t i = static_cast<size_t>(state.thread_index()) * (kKeys / 7) % kKeys;
  int64_t now_ns = 1'000'000'000;
  int64_t admitted = 0;
  for (auto _ : state) {
    now_ns += 1000;
    if (++i == kKeys) i = 0;
    if constexpr (kLookAhead > 0) store->prefetch(keys[(i + kLookAhead) % kKeys]);
    admitted += store->decide(keys[i], now_ns, 1)->allowed();
  }
  benchmark::DoNotOptimize(admitted);
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(std::string(algorithmName(kind)));
  if (state.thread_index() == 0) state.counters["held"] = static_cast<double>(store->stats().keys);
}

// The hash of an 18-byte key alone: 0 the unkeyed std::hash, 1 SipHash-1-3, 2 the AES-round
// hash (where the CPU has AES instructions), 3 keyedHash(), whichever of 1 and 2 it uses.
void BM_KeyHash(benchmark::State& state) {
  const std::string key = "api-key-0123456789";
  const int which = static_cast<int>(state.range(0));
  if (which == 2 && !aesHashAvailable()) {
    state.SkipWithError("this CPU has no AES instructions");
    return;
  }
  const SipKey& sip = processSipKey();
  const AesHashKey& aes = processAesHashKey();
  uint64_t sum = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(key.data());
    switch (which) {
      case 0:
        sum += std::hash<std::string_view>{}(key);
        break;
      case 1:
        sum += sipHash13(sip, key);
        break;
      case 2:
        sum += aesHash(aes, key);
        break;
      default:
        sum += keyedHash(key);
        break;
    }
  }
  benchmark::DoNotOptimize(sum);
  state.SetLabel(which == 0   ? "std::hash"
                 : which == 1 ? "siphash-1-3"
                 : which == 2 ? "aes"
                              : "keyed");
}

constexpr int64_t kTokenBucket = static_cast<int64_t>(AlgorithmKind::kTokenBucket);
constexpr int64_t kGcra = static_cast<int64_t>(AlgorithmKind::kGcra);

BENCHMARK(BM_KeyHash)->DenseRange(0, 3);
BENCHMARK(BM_HotKey)->DenseRange(0, 5)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_HotKeyRealClock<SteadyClock>)->Arg(kTokenBucket)->Arg(kGcra)->UseRealTime();
BENCHMARK(BM_HotKeyRealClock<CoarseSteadyClock>)->Arg(kTokenBucket)->Arg(kGcra)->UseRealTime();
BENCHMARK(BM_ManyKeys<0>)
    ->ArgsProduct({{kTokenBucket, kGcra}, {1000, 1'000'000}})
    ->ArgNames({"algorithm", "keys"})
    ->Threads(1)
    ->Threads(2)
    ->UseRealTime();
BENCHMARK(BM_ManyKeys<8>)
    ->ArgsProduct({{kTokenBucket, kGcra}, {1'000'000}})
    ->ArgNames({"algorithm", "keys"})
    ->Threads(1)
    ->Threads(2)
    ->UseRealTime();

void printStateSizes() {
  std::printf(
      "store: one %zu-byte slot per key (tag, key inline up to 23 bytes, 32 bytes of state);\n"
      "tables are 3/8 to 3/4 full: %zu to %zu bytes per key\n",
      MemoryStore::slotBytes(), MemoryStore::slotBytes() * 4 / 3, MemoryStore::slotBytes() * 8 / 3);
  std::printf("state each algorithm needs per key (bytes):\n");
  for (int k = 0; k <= 5; ++k) {
    auto kind = static_cast<AlgorithmKind>(k);
    auto algorithm = algorithmFor(kind);
    std::printf("  %-24s %6zu%s\n", std::string(algorithmName(kind)).c_str(),
                algorithm->stateBytes(),
                kind == AlgorithmKind::kSlidingWindowLog
                    ? "  (at most: 8 per admitted unit on the heap, here limit 1000)"
                    : "");
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  printStateSizes();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
