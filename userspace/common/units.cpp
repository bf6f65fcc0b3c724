// SPDX-License-Identifier: MIT
// Parsing of numbers with units: a decimal number, then a suffix from a small table.
#include "floodgate/common/units.h"

#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace floodgate {
namespace {

using Suffixes = std::vector<std::pair<std::string_view, double>>;

// Splits "1.5Mbit" into 1.5 and "Mbit"; false when there is no leading number.
bool splitNumber(std::string_view text, double& number, std::string_view& suffix) {
  size_t end = 0;
  bool digits = false, dot = false;
  while (end < text.size()) {
    char c = text[end];
    if (c >= '0' && c <= '9') {
      digits = true;
    } else if (c == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
    ++end;
  }
  if (!digits) return false;
  // from_chars, not stod: stod throws on a number beyond a double's range (400 nines), and
  // follows the locale; an out-of-range number is simply not a number here.
  auto [parsed_end, ec] = std::from_chars(text.data(), text.data() + end, number);
  if (ec != std::errc() || parsed_end != text.data() + end) return false;
  suffix = text.substr(end);
  while (!suffix.empty() && suffix.front() == ' ') suffix.remove_prefix(1);
  return true;
}

Result<uint64_t> parseWithSuffixes(std::string_view text, const Suffixes& suffixes,
                                   const char* what, const char* example) {
  double number = 0;
  std::string_view suffix;
  auto bad = [&] {
    return Error::usage("'" + std::string(text) + "' is not " + what + " (expected e.g. " +
                        example + ")");
  };
  if (!splitNumber(text, number, suffix)) return bad();
  for (const auto& [name, scale] : suffixes) {
    if (suffix != name) continue;
    double value = number * scale;
    if (value < 1 || value > 1.8e19) return bad();
    double rounded = std::round(value);
    // "1.1k" is 1100.0000000000002 as a double: forgive the rounding of the multiplication,
    // never a written fraction ("10000000.4")
    if (std::fabs(value - rounded) > value * 4 * DBL_EPSILON) {
      return Error::usage("'" + std::string(text) + "' is not a whole number of units");
    }
    return static_cast<uint64_t>(rounded);
  }
  return bad();
}

}  // namespace

Result<uint64_t> parseCount(std::string_view text) {
  static const Suffixes kSuffixes = {{"", 1}, {"k", 1e3}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}};
  return parseWithSuffixes(text, kSuffixes, "a positive count", "250, 10k or 1.5M");
}

Result<uint64_t> parseBitRate(std::string_view text) {
  static const Suffixes kSuffixes = {
      {"", 1},       {"bit", 1},     {"bps", 1},     {"kbit", 1e3}, {"Kbit", 1e3},
      {"kbps", 1e3}, {"Kbps", 1e3},  {"Mbit", 1e6},  {"Mbps", 1e6}, {"Gbit", 1e9},
      {"Gbps", 1e9}, {"Tbit", 1e12}, {"Tbps", 1e12},
  };
  return parseWithSuffixes(text, kSuffixes, "a bit rate", "100Mbit or 1Gbit");
}

Result<uint64_t> parseBytes(std::string_view text) {
  static const Suffixes kSuffixes = {
      {"", 1},
      {"B", 1},
      {"k", 1e3},
      {"K", 1e3},
      {"KB", 1e3},
      {"kB", 1e3},
      {"KiB", 1024.0},
      {"M", 1e6},
      {"MB", 1e6},
      {"MiB", 1048576.0},
      {"G", 1e9},
      {"GB", 1e9},
      {"GiB", 1073741824.0},
  };
  return parseWithSuffixes(text, kSuffixes, "a size in bytes", "1500, 64KiB or 1MB");
}

Result<uint64_t> parseDuration(std::string_view text) {
  static const Suffixes kSuffixes = {
      {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}, {"d", 86400e9},
  };
  return parseWithSuffixes(text, kSuffixes, "a duration", "500ms, 30s, 10m or 1h");
}

namespace {
std::string formatScaled(double value, const char* const* names, int count, double step) {
  int i = 0;
  while (i + 1 < count && value >= step && std::fmod(value, step) == 0) {
    value /= step;
    ++i;
  }
  if (i + 1 < count && value >= step) {  // not a whole multiple: one decimal is enough
    value /= step;
    ++i;
  }
  char text[64];
  std::snprintf(text, sizeof(text), "%.10g%s", value, names[i]);
  return text;
}
}  // namespace

std::string formatCount(uint64_t value) {
  static const char* const kNames[] = {"", "k", "M", "G"};
  return formatScaled(static_cast<double>(value), kNames, 4, 1000);
}

std::string formatBitRate(uint64_t bits_per_second) {
  static const char* const kNames[] = {"bit", "kbit", "Mbit", "Gbit", "Tbit"};
  return formatScaled(static_cast<double>(bits_per_second), kNames, 5, 1000);
}

std::string formatDuration(uint64_t ns) {
  if (ns % 86400000000000ULL == 0) return std::to_string(ns / 86400000000000ULL) + "d";
  if (ns % 3600000000000ULL == 0) return std::to_string(ns / 3600000000000ULL) + "h";
  if (ns % 60000000000ULL == 0) return std::to_string(ns / 60000000000ULL) + "m";
  if (ns % 1000000000ULL == 0) return std::to_string(ns / 1000000000ULL) + "s";
  if (ns % 1000000ULL == 0) return std::to_string(ns / 1000000ULL) + "ms";
  // Under a whole millisecond: a decimal fraction of one ("0.5ms"), which parseDuration reads
  // back; whole milliseconds alone would print 500 us as "0ms".
  char text[48];
  std::snprintf(text, sizeof(text), "%llu.%06llu", static_cast<unsigned long long>(ns / 1000000ULL),
                static_cast<unsigned long long>(ns % 1000000ULL));
  std::string out = text;
  out.erase(out.find_last_not_of('0') + 1);
  return out + "ms";
}

}  // namespace floodgate
