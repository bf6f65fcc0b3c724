// SPDX-License-Identifier: MIT
// Numbers with units as operators write them: 10k pps, 1Gbit, 64KiB, 10m.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "floodgate/common/result.h"

namespace floodgate {

// "250", "10k", "1.5M", "2G" (SI, ×1000). A whole number > 0; used for pps and bursts.
Result<uint64_t> parseCount(std::string_view text);

// "100Mbit", "1Gbit", "1.5Gbps", "800kbit", or a plain number of bits per second.
Result<uint64_t> parseBitRate(std::string_view text);

// "1500", "64k" / "64KB" (×1000), "64KiB" (×1024), "1M", "1MiB": a number of bytes.
Result<uint64_t> parseBytes(std::string_view text);

// "500ms", "30s", "10m", "2h", "1d": nanoseconds.
Result<uint64_t> parseDuration(std::string_view text);

// 1500000 → "1.5M"; the inverse of parseCount for display.
std::string formatCount(uint64_t value);

// 1000000000 → "1Gbit".
std::string formatBitRate(uint64_t bits_per_second);

// 600000000000 → "10m".
std::string formatDuration(uint64_t ns);

}  // namespace floodgate
