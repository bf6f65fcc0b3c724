// SPDX-License-Identifier: MIT
// The shared checks of YamlReader: types, keys and units, each failure one positioned line.
#include "floodgate/yaml/yaml_reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "floodgate/yaml/yaml_mark.h"

namespace floodgate::config {

const YamlEntry* YamlFields::find(std::string_view name) const {
  for (const auto& [key, entry] : entries_) {
    if (key == name) return &entry;
  }
  return nullptr;
}

YAML::Node loadOneDocument(const std::string& text) {
  const std::vector<YAML::Node> documents = YAML::LoadAll(text);
  // by index: a YAML::Node assigned to rewrites the node it refers to (see YamlEntry)
  size_t first = documents.size();
  for (size_t i = 0; i < documents.size(); ++i) {
    if (documents[i].IsNull()) continue;
    if (first != documents.size()) {
      throw YAML::ParserException(documents[i].Mark(),
                                  "a second YAML document starts here; floodgate reads one "
                                  "document a file: merge it into the first or remove the "
                                  "'---' (or '...') line before it");
    }
    first = i;
  }
  return first == documents.size() ? YAML::Node() : documents[first];
}

std::vector<YamlEntry> itemsOf(const YamlEntry& list) {
  std::vector<YamlEntry> items;
  if (!list.value.IsSequence()) return items;
  for (const YAML::Node& value : list.value) items.push_back({list.value, value});
  return items;
}

std::string describeNode(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "nothing";
  if (node.IsMap()) return "a mapping";
  if (node.IsSequence()) return "a list";
  return "'" + node.Scalar() + "'";
}

std::string joinNames(std::initializer_list<std::string_view> names) {
  std::string out;
  for (std::string_view name : names) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

void YamlReader::error(const YAML::Node& node, std::string message) {
  // Past the budget the rest of the file was not read: what follows would be noise.
  if (exhausted_) return;
  addAt(diagnostics_, file_, node, std::move(message));
}

bool YamlReader::spend(const YAML::Node& node, size_t values) {
  if (exhausted_) return false;
  values_read_ += values;
  if (values_read_ <= kMaxValues) return true;
  error(node, "too much to read: the file stands for more than " + std::to_string(kMaxValues) +
                  " values (an alias counts every time it is used); write it without aliases "
                  "to lists of aliases");
  exhausted_ = true;
  return false;
}

void YamlReader::error(const YamlEntry& entry, std::string message) {
  const bool empty_value = !entry.value.IsDefined() || entry.value.IsNull();
  error(empty_value ? entry.key : entry.value, std::move(message));
}

void YamlReader::anchorSince(size_t first, const YAML::Node& node) {
  if (first == diagnostics_.size()) return;
  const YAML::Mark mark = node.Mark();
  anchors_.push_back({first, diagnostics_.size(), mark.line + 1, mark.column + 1});
}

std::vector<Diagnostic> YamlReader::sortedDiagnostics() const {
  struct Keyed {
    int line, column;
    const Diagnostic* diagnostic;
  };
  std::vector<Keyed> keyed;
  const std::vector<Diagnostic>& items = diagnostics_.items();
  for (size_t i = 0; i < items.size(); ++i) {
    Keyed k{items[i].line, items[i].column, &items[i]};
    for (const AnchoredRange& range : anchors_) {
      if (i >= range.first && i < range.end) k = {range.line, range.column, &items[i]};
    }
    keyed.push_back(k);
  }
  std::stable_sort(keyed.begin(), keyed.end(), [](const Keyed& a, const Keyed& b) {
    return a.line != b.line ? a.line < b.line : a.column < b.column;
  });
  std::vector<Diagnostic> out;
  for (const Keyed& k : keyed) out.push_back(*k.diagnostic);
  return out;
}

std::string YamlReader::where(std::string_view what) {
  return what.empty() ? "at the top level" : "in " + std::string(what);
}

void YamlReader::repeated(const YAML::Node& key, const std::string& name, std::string_view what,
                          int first_line) {
  error(key, "key '" + name + "' is given twice " + where(what) + " (first at line " +
                 std::to_string(first_line) + ")");
}

std::optional<YamlFields> YamlReader::mapping(const YamlEntry& entry, std::string_view what,
                                              std::initializer_list<std::string_view> known) {
  const YAML::Node& node = entry.value;
  if (!spend(node, 1 + (node.IsMap() ? node.size() : 0))) return std::nullopt;
  if (!node.IsMap()) {
    // A whole file that is one scalar is most likely not a config at all (a key or a
    // password file given by mistake): its text is not repeated into a terminal or a log.
    const bool whole_file = what.empty();
    const std::string got =
        whole_file && node.IsScalar() ? "plain text: is this the right file?" : describeNode(node);
    std::string name = whole_file ? "the config" : std::string(what);
    error(entry, name + " must be a mapping of " + joinNames(known) + " (got " + got + ")");
    return std::nullopt;
  }
  YamlFields fields;
  std::vector<std::pair<std::string, int>> seen;  // key, 1-based line
  for (const auto& item : node) {
    const std::string key = item.first.IsScalar() ? item.first.Scalar() : describeNode(item.first);
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      error(item.first,
            "unknown key '" + key + "' " + where(what) + " (expected " + joinNames(known) + ")");
      continue;
    }
    auto first =
        std::find_if(seen.begin(), seen.end(), [&](const auto& s) { return s.first == key; });
    if (first != seen.end()) {
      repeated(item.first, key, what, first->second);
      continue;
    }
    seen.emplace_back(key, item.first.Mark().line + 1);
    fields.add(key, {item.first, item.second});
  }
  return fields;
}

std::optional<YamlEntry> YamlReader::field(const YamlEntry& entry, std::string_view what,
                                           std::string_view name) {
  if (!entry.value.IsMap()) return std::nullopt;
  std::optional<YamlEntry> found;
  for (const auto& item : entry.value) {
    if (!item.first.IsScalar() || item.first.Scalar() != name) continue;
    if (found) {
      repeated(item.first, std::string(name), what, found->key.Mark().line + 1);
    } else {
      found.emplace(YamlEntry{item.first, item.second});
    }
  }
  return found;
}

bool YamlReader::list(const YamlEntry& entry, std::string_view what, std::string_view shape) {
  if (!spend(entry.value, 1 + (entry.value.IsSequence() ? entry.value.size() : 0))) return false;
  if (entry.value.IsSequence()) return true;
  error(entry, std::string(what) + " must be a list of " + std::string(shape) + " (got " +
                   describeNode(entry.value) + ")");
  return false;
}

std::optional<std::string> YamlReader::text(const YamlEntry& entry, std::string_view what) {
  if (!spend(entry.value)) return std::nullopt;
  if (!entry.value.IsScalar() || entry.value.Scalar().empty()) {
    error(entry, std::string(what) + " must be a non-empty string (got " +
                     describeNode(entry.value) + ")");
    return std::nullopt;
  }
  // No setting holds a control character, and one would mean something else where the text
  // goes: a NUL ends a path at open() (so "a\0x" opens `a` under another name), and a newline
  // or an escape forges lines in logs, labels and messages.
  const std::string& value = entry.value.Scalar();
  auto control = [](unsigned char c) { return c < 0x20 || c == 0x7f; };
  if (auto bad = std::find_if(value.begin(), value.end(), control); bad != value.end()) {
    char byte[8];
    std::snprintf(byte, sizeof(byte), "0x%02x", static_cast<unsigned char>(*bad));
    error(entry, std::string(what) + " holds a control character (byte " + byte + " at offset " +
                     std::to_string(bad - value.begin()) +
                     "): write it without NULs, newlines, tabs or escapes");
    return std::nullopt;
  }
  return value;
}

std::optional<size_t> YamlReader::choice(const YamlEntry& entry, std::string_view what,
                                         std::initializer_list<std::string_view> choices) {
  if (!spend(entry.value)) return std::nullopt;
  if (entry.value.IsScalar()) {
    auto it = std::find(choices.begin(), choices.end(), entry.value.Scalar());
    if (it != choices.end()) return static_cast<size_t>(it - choices.begin());
  }
  error(entry, std::string(what) + " must be one of " + joinNames(choices) + " (got " +
                   describeNode(entry.value) + ")");
  return std::nullopt;
}

std::optional<bool> YamlReader::boolean(const YamlEntry& entry, std::string_view what) {
  if (!spend(entry.value)) return std::nullopt;
  bool value = false;
  if (entry.value.IsScalar() && YAML::convert<bool>::decode(entry.value, value)) return value;
  error(entry,
        std::string(what) + " must be true or false (got " + describeNode(entry.value) + ")");
  return std::nullopt;
}

std::optional<uint64_t> YamlReader::withUnit(const YamlEntry& entry, std::string_view what,
                                             Result<uint64_t> (*parse)(std::string_view),
                                             std::string_view example) {
  if (!spend(entry.value)) return std::nullopt;
  if (!entry.value.IsScalar()) {
    error(entry, std::string(what) + " must be a single value such as " + std::string(example) +
                     " (got " + describeNode(entry.value) + ")");
    return std::nullopt;
  }
  Result<uint64_t> value = parse(entry.value.Scalar());
  if (!value) {
    error(entry, std::string(what) + ": " + value.error().message);
    return std::nullopt;
  }
  return *value;
}

std::optional<uint64_t> YamlReader::withUnit(const YamlEntry& entry, std::string_view what,
                                             Result<uint64_t> (*parse)(std::string_view),
                                             std::string_view example, uint64_t min, uint64_t max,
                                             std::string (*format)(uint64_t)) {
  if (!spend(entry.value)) return std::nullopt;
  std::optional<uint64_t> value = withUnit(entry, what, parse, example);
  if (value && (*value < min || *value > max)) {
    error(entry, std::string(what) + " must be from " + format(min) + " to " + format(max) +
                     ", got " + entry.value.Scalar());
    return std::nullopt;
  }
  return value;
}

std::optional<int64_t> YamlReader::integer(const YamlEntry& entry, std::string_view what,
                                           int64_t min, int64_t max) {
  if (!spend(entry.value)) return std::nullopt;
  int64_t value = 0;
  bool parsed = false;
  if (entry.value.IsScalar()) {
    const std::string& text = entry.value.Scalar();
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    parsed = ec == std::errc() && end == text.data() + text.size() && !text.empty();
  }
  if (!parsed) {
    error(entry, std::string(what) + " must be a whole number from " + std::to_string(min) +
                     " to " + std::to_string(max) + " (got " + describeNode(entry.value) + ")");
    return std::nullopt;
  }
  if (value < min || value > max) {
    error(entry, std::string(what) + " must be from " + std::to_string(min) + " to " +
                     std::to_string(max) + ", got " + std::to_string(value));
    return std::nullopt;
  }
  return value;
}

std::optional<double> YamlReader::number(const YamlEntry& entry, std::string_view what, double min,
                                         double max) {
  if (!spend(entry.value)) return std::nullopt;
  // Bounds and values as written ("0.001", not "1e-03"), up to a double's precision.
  auto show = [](double bound) {
    std::ostringstream out;
    out.precision(12);
    out << bound;
    return out.str();
  };
  double value = 0;
  bool parsed = false;
  if (entry.value.IsScalar()) {
    // from_chars: no locale, no exception, and a number beyond a double's range is no number.
    const std::string& text = entry.value.Scalar();
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    parsed = ec == std::errc() && end == text.data() + text.size() && !text.empty() &&
             std::isfinite(value);
  }
  if (!parsed) {
    error(entry, std::string(what) + " must be a number from " + show(min) + " to " + show(max) +
                     " (got " + describeNode(entry.value) + ")");
    return std::nullopt;
  }
  if (value < min || value > max) {
    error(entry, std::string(what) + " must be from " + show(min) + " to " + show(max) + ", got " +
                     entry.value.Scalar());
    return std::nullopt;
  }
  return value;
}

std::vector<YamlString> YamlReader::strings(const YamlEntry& entry, std::string_view what,
                                            std::string_view shape, std::string_view item_what) {
  std::vector<YamlString> out;
  if (!list(entry, what, shape)) return out;
  for (const YamlEntry& item : itemsOf(entry)) {
    if (std::optional<std::string> string = text(item, item_what)) {
      out.push_back({std::move(*string), item});
    }
  }
  return out;
}

}  // namespace floodgate::config
