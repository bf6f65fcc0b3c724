// SPDX-License-Identifier: MIT
// Splitting the protocol's lines into words and fields.
#include "line_words.h"

#include <charconv>

namespace floodgate::report {

std::vector<std::string_view> lineWords(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  std::vector<std::string_view> words;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string_view::npos) end = text.size();
    if (end > start) words.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return words;
}

std::optional<std::string_view> fieldText(std::string_view field, std::string_view name) {
  if (field.size() <= name.size() + 1 || field.substr(0, name.size()) != name ||
      field[name.size()] != '=') {
    return std::nullopt;
  }
  return field.substr(name.size() + 1);
}

std::optional<int64_t> fieldValue(std::string_view field, std::string_view name) {
  std::optional<std::string_view> digits = fieldText(field, name);
  if (!digits) return std::nullopt;
  int64_t value = 0;
  auto [end, ec] = std::from_chars(digits->data(), digits->data() + digits->size(), value);
  if (ec != std::errc() || end != digits->data() + digits->size() || value < 0) return std::nullopt;
  return value;
}

}  // namespace floodgate::report
