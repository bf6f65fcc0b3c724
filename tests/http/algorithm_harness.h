// SPDX-License-Identifier: MIT
// A tiny harness that steps one algorithm's key through hand-worked arrivals in milliseconds.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "common/algorithm_vectors.h"
#include "floodgate/core/algorithm.h"

namespace floodgate::http::testing {

inline constexpr int64_t kMs = 1'000'000;

// One key under one algorithm; times in ms on a virtual timeline.
class OneKey {
 public:
  explicit OneKey(const AlgorithmParams& params) {
    auto made = makeAlgorithm(params);
    EXPECT_TRUE(made.ok()) << (made.ok() ? "" : made.error().message);
    if (made.ok()) algorithm_ = *made;
  }
  Decision at(int64_t t_ms, int64_t cost = 1) { return atNs(t_ms * kMs, cost); }
  Decision atNs(int64_t t_ns, int64_t cost = 1) { return algorithm_->decide(state_, t_ns, cost); }
  // Refunds a request admitted at t_ms, at once (another policy rejected it).
  void refund(int64_t t_ms, int64_t cost = 1) { refundLate(t_ms, t_ms, cost); }
  // Refunds at now_ms a request admitted at admitted_ms (a 400 answered after a slow body).
  void refundLate(int64_t admitted_ms, int64_t now_ms, int64_t cost) {
    algorithm_->refund(state_, admitted_ms * kMs, now_ms * kMs, cost);
  }
  const Algorithm& algorithm() const { return *algorithm_; }
  KeyState& state() { return state_; }

 private:
  std::shared_ptr<const Algorithm> algorithm_;
  KeyState state_;
};

inline AlgorithmParams window(AlgorithmKind kind, int64_t limit, int64_t window_ms) {
  AlgorithmParams p;
  p.kind = kind;
  p.limit = limit;
  p.window_ms = window_ms;
  return p;
}

inline AlgorithmParams bucket(AlgorithmKind kind, int64_t capacity, double rate_per_s) {
  AlgorithmParams p;
  p.kind = kind;
  p.capacity = capacity;
  p.rate_per_s = rate_per_s;
  return p;
}

// The library's parameters of a vector of tests/data/algorithms/.
inline AlgorithmParams paramsOf(const test::AlgorithmVector& v) {
  if (v.isGcra()) return bucket(AlgorithmKind::kGcra, v.limit, static_cast<double>(v.rate_per_s));
  return window(v.algorithm == "fixed_window" ? AlgorithmKind::kFixedWindow
                                              : AlgorithmKind::kSlidingWindowCounter,
                v.limit, v.window_ms);
}

// A policy's parameters before and after its limits were raised: per algorithm, the
// capacity or limit and the rate raised (or the rate alone, or nothing), never the window.
struct Raise {
  AlgorithmParams from, to;
};

inline std::vector<Raise> raisedLimits() {
  return {
      {window(AlgorithmKind::kFixedWindow, 5, 1000), window(AlgorithmKind::kFixedWindow, 8, 1000)},
      {window(AlgorithmKind::kSlidingWindowLog, 5, 1000),
       window(AlgorithmKind::kSlidingWindowLog, 9, 1000)},
      {window(AlgorithmKind::kSlidingWindowCounter, 5, 1000),
       window(AlgorithmKind::kSlidingWindowCounter, 6, 1000)},
      {bucket(AlgorithmKind::kTokenBucket, 5, 2), bucket(AlgorithmKind::kTokenBucket, 7, 3.5)},
      {bucket(AlgorithmKind::kTokenBucket, 5, 2), bucket(AlgorithmKind::kTokenBucket, 5, 2.001)},
      {bucket(AlgorithmKind::kGcra, 5, 2), bucket(AlgorithmKind::kGcra, 6, 10)},
      {bucket(AlgorithmKind::kGcra, 5, 2), bucket(AlgorithmKind::kGcra, 5, 2.5)},
      {bucket(AlgorithmKind::kGcra, 5, 2), bucket(AlgorithmKind::kGcra, 5, 2)},
      {bucket(AlgorithmKind::kLeakyBucket, 5, 2), bucket(AlgorithmKind::kLeakyBucket, 9, 3)},
  };
}

}  // namespace floodgate::http::testing
