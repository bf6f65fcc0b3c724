// SPDX-License-Identifier: MIT
// Writing and reading the offender report's line.
#include "floodgate/report/offender_report.h"

#include <charconv>
#include <optional>
#include <vector>

namespace floodgate::report {
namespace {

// The value of "NAME=N" in `field`, or nullopt.
std::optional<int64_t> fieldValue(std::string_view field, std::string_view name) {
  if (field.size() <= name.size() + 1 || field.substr(0, name.size()) != name ||
      field[name.size()] != '=') {
    return std::nullopt;
  }
  std::string_view digits = field.substr(name.size() + 1);
  int64_t value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size() || value < 0) return std::nullopt;
  return value;
}

}  // namespace

std::string formatReport(std::string_view client_key, int64_t rejections, int64_t within_ms) {
  return "offender " + std::string(client_key) + " rejections=" + std::to_string(rejections) +
         " within_ms=" + std::to_string(within_ms);
}

Result<OffenderReport> parseReport(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  std::vector<std::string_view> words;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string_view::npos) end = text.size();
    if (end > start) words.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  const char* shape = "a report is 'offender ADDRESS rejections=N within_ms=N'";
  if (words.size() != 4 || words[0] != "offender") return Error::usage(std::string(shape));
  auto address = parseCidr(words[1]);
  if (!address)
    return Error::usage("'" + std::string(words[1]) + "' is not an IP address or prefix; " + shape);
  auto rejections = fieldValue(words[2], "rejections");
  auto within = fieldValue(words[3], "within_ms");
  if (!rejections || !within) return Error::usage(std::string(shape));
  return OffenderReport{*address, *rejections, *within};
}

}  // namespace floodgate::report
