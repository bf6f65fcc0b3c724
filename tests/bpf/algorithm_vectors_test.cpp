// SPDX-License-Identifier: MIT
// The shared vectors of tests/data/algorithms/, replayed by the XDP program itself with
// BPF_PROG_TEST_RUN on a clock the test sets: each arrival runs once, at its own instant.
#include "common/algorithm_vectors.h"

#include <string>

#include "bpf/xdp_fixture.h"
#include "controller/rule_compiler.h"

namespace floodgate::test {
namespace {

// The test clock ticks once a millisecond: a vector's times are whole jiffies.
constexpr uint32_t kClockHz = 1000;
// The smallest frame the program rates as UDP over IPv4: Ethernet, IPv4 and UDP headers.
constexpr int64_t kLeastFrame = 42;

class AlgorithmVectorTest : public XdpProgramTest {
 protected:
  // Packets (every cost 1) or bytes (a frame of `cost` bytes) per `limit` units: the rule
  // that holds `v` in the program, or why the program cannot express it.
  static std::string ruleFor(const AlgorithmVector& v, RuleSpec& rule) {
    const bool packets = v.everyCostIs(1);
    if (!packets && v.leastCost() < kLeastFrame) return "costs a frame cannot have";
    if (v.isGcra()) {
      rule.algorithm = Algorithm::kTokenBucket;
      if (packets) {
        rule.limit.pps = static_cast<uint64_t>(v.rate_per_s);
        rule.limit.burst = static_cast<uint64_t>(v.limit);
      } else {
        if (v.limit < static_cast<int64_t>(kMinBurstBytes)) return "a burst under one frame";
        rule.limit.bits_per_s = static_cast<uint64_t>(v.rate_per_s) * 8;
        rule.limit.burst_bytes = static_cast<uint64_t>(v.limit);
      }
      return "";
    }
    if (v.algorithm == "sliding_window_counter") {
      if (!packets) return "the sliding window counts packets only here";
      rule.algorithm = Algorithm::kSlidingWindow;
    } else {
      rule.algorithm = Algorithm::kFixedWindow;
    }
    rule.window_ns = static_cast<uint64_t>(v.window_ms) * 1'000'000;
    // the rate whose whole window holds exactly `limit` (the compiler rounds down)
    const uint64_t per_s = (static_cast<uint64_t>(v.limit) * 1000 + v.window_ms - 1) / v.window_ms;
    if (per_s * v.window_ms / 1000 != static_cast<uint64_t>(v.limit)) return "no rate fits";
    if (packets) {
      rule.limit.pps = per_s;
    } else {
      if (v.limit < static_cast<int64_t>(kMinBurstBytes)) return "a window under one frame";
      rule.limit.bits_per_s = per_s * 8;
    }
    return "";
  }

  static std::vector<uint8_t> frameOf(int64_t cost, bool packets) {
    PacketBuilder builder;
    builder.eth().ipv4("192.0.2.1", "198.51.100.1").udp(53);
    if (!packets) builder.payload(static_cast<size_t>(cost - kLeastFrame));
    return builder.build();
  }
};

TEST_F(AlgorithmVectorTest, TheProgramDecidesEveryArrivalAsTheVectorsSay) {
  int replayed = 0;
  for (const AlgorithmVector& v : loadAlgorithmVectors(FLOODGATE_ALGORITHM_VECTORS)) {
    RuleSpec rule;
    if (std::string why = ruleFor(v, rule); !why.empty()) {
      std::printf("not in the program: %s vector %s (%s)\n", v.file.c_str(), v.name.c_str(),
                  why.c_str());
      continue;
    }
    AttachOptions options;
    options.test_clock_hz = kClockHz;
    load({rule}, options);
    const bool packets = v.everyCostIs(1);
    for (const VectorArrival& a : v.arrivals) {
      auto frame = frameOf(a.cost, packets);
      ASSERT_TRUE(packets || static_cast<int64_t>(frame.size()) == a.cost) << v.where(a);
      setClock(static_cast<uint64_t>(v.originMs() + a.at_ms));
      EXPECT_EQ(run(frame) == XDP_PASS, a.admit) << v.where(a);
    }
    ++replayed;
    TearDown();  // the next vector starts from fresh maps
    SetUp();
  }
  // gcra: 2, fixed_window: 2, sliding_window_counter: 2
  EXPECT_EQ(replayed, 6);
}

}  // namespace
}  // namespace floodgate::test
