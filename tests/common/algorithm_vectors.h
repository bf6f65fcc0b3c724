// SPDX-License-Identifier: MIT
// The shared algorithm vectors of tests/data/algorithms/ (see its README.md): read here once
// for the C++, Lua and BPF tests that each replay them.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace floodgate::test {

// One arrival: `at_ms` after the vector's origin, of `cost` units, and its decision.
struct VectorArrival {
  int64_t at_ms = 0;
  int64_t cost = 1;
  bool admit = false;
  int line = 0;
};

struct AlgorithmVector {
  std::string file;        // its path, for messages
  std::string name;        // `vector NAME`
  std::string algorithm;   // gcra | fixed_window | sliding_window_counter
  int64_t limit = 0;       // gcra: capacity; windows: limit
  int64_t window_ms = 0;   // windows only
  int64_t rate_per_s = 0;  // gcra only
  std::vector<VectorArrival> arrivals;

  bool isGcra() const { return algorithm == "gcra"; }
  // "file:line vector NAME", for a failure message.
  std::string where(const VectorArrival& arrival) const {
    return file + ":" + std::to_string(arrival.line) + " vector " + name;
  }
  // A whole number of windows near ten thousand seconds: every implementation starts its
  // clock well past 0 there (and a 1000 Hz jiffy clock stays far from wrapping).
  int64_t originMs() const {
    constexpr int64_t kNear = 10'000'000;
    const int64_t step = window_ms > 0 ? window_ms : 1;
    return (kNear + step - 1) / step * step;
  }
  bool everyCostIs(int64_t cost) const {
    for (const VectorArrival& a : arrivals) {
      if (a.cost != cost) return false;
    }
    return true;
  }
  int64_t leastCost() const {
    int64_t least = INT64_MAX;
    for (const VectorArrival& a : arrivals) least = std::min(least, a.cost);
    return least;
  }
};

// Parses one file; a malformed line fails the calling test with its file:line.
inline std::vector<AlgorithmVector> parseAlgorithmVectors(const std::string& path) {
  std::vector<AlgorithmVector> vectors;
  std::ifstream in(path);
  EXPECT_TRUE(in) << "cannot read " << path;
  std::string text;
  int line_no = 0;
  while (std::getline(in, text)) {
    ++line_no;
    if (auto hash = text.find('#'); hash != std::string::npos) text.resize(hash);
    std::istringstream line(text);
    std::string word;
    if (!(line >> word)) continue;
    const std::string where = path + ":" + std::to_string(line_no);
    if (word == "vector") {
      vectors.emplace_back();
      vectors.back().file = path;
      line >> vectors.back().name;
      continue;
    }
    if (vectors.empty()) {
      ADD_FAILURE() << where << ": '" << word << "' before any 'vector'";
      return {};
    }
    AlgorithmVector& v = vectors.back();
    bool ok = true;
    if (word == "algorithm") {
      ok = static_cast<bool>(line >> v.algorithm);
    } else if (word == "capacity" || word == "limit") {
      ok = static_cast<bool>(line >> v.limit);
    } else if (word == "window_ms") {
      ok = static_cast<bool>(line >> v.window_ms);
    } else if (word == "rate_per_s") {
      ok = static_cast<bool>(line >> v.rate_per_s);
    } else if (word == "at") {
      VectorArrival a;
      std::string decision;
      a.line = line_no;
      ok = static_cast<bool>(line >> a.at_ms >> a.cost >> decision) &&
           (decision == "admit" || decision == "reject");
      a.admit = decision == "admit";
      if (ok && !v.arrivals.empty() && a.at_ms < v.arrivals.back().at_ms) ok = false;
      v.arrivals.push_back(a);
    } else {
      ok = false;
    }
    std::string rest;
    if (!ok || (line >> rest)) {
      ADD_FAILURE() << where << ": cannot read '" << text << "'";
      return {};
    }
  }
  return vectors;
}

// Every vector of tests/data/algorithms/ (`dir`), in file then line order.
inline std::vector<AlgorithmVector> loadAlgorithmVectors(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".txt") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  std::vector<AlgorithmVector> all;
  for (const std::string& file : files) {
    for (AlgorithmVector& v : parseAlgorithmVectors(file)) all.push_back(std::move(v));
  }
  EXPECT_FALSE(all.empty()) << "no vectors in " << dir;
  return all;
}

}  // namespace floodgate::test
