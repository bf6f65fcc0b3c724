// SPDX-License-Identifier: MIT
// The shared vectors of tests/data/algorithms/, replayed by the library's own algorithms.
#include <gtest/gtest.h>

#include "floodgate/core/algorithm.h"
#include "http/algorithm_harness.h"

namespace floodgate::http {
namespace {

using test::AlgorithmVector;
using test::VectorArrival;
using testing::paramsOf;

TEST(AlgorithmVectors, TheLibraryDecidesEveryArrivalAsTheVectorsSay) {
  int replayed = 0;
  for (const AlgorithmVector& v : test::loadAlgorithmVectors(FLOODGATE_ALGORITHM_VECTORS)) {
    ASSERT_TRUE(v.isGcra() || v.algorithm == "fixed_window" ||
                v.algorithm == "sliding_window_counter")
        << v.file << " vector " << v.name << ": unknown algorithm '" << v.algorithm << "'";
    auto algorithm = makeAlgorithm(paramsOf(v));
    ASSERT_TRUE(algorithm.ok()) << v.name << ": " << algorithm.error().message;
    KeyState state;
    for (const VectorArrival& a : v.arrivals) {
      Decision d = (*algorithm)->decide(state, (v.originMs() + a.at_ms) * testing::kMs, a.cost);
      EXPECT_EQ(d.allowed(), a.admit) << v.where(a);
    }
    ++replayed;
  }
  EXPECT_GE(replayed, 9);
}

}  // namespace
}  // namespace floodgate::http
