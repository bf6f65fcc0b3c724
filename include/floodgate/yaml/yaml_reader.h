// SPDX-License-Identifier: MIT
// YamlReader: the checks every section of floodgate.yaml shares (mapping keys, scalar types,
// units), each reporting a positioned diagnostic and carrying on so all problems surface.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "floodgate/common/result.h"
#include "floodgate/yaml/diagnostics.h"

namespace floodgate::config {

// A value and the key (or list) it came from. yaml-cpp marks an empty value (`pps:`) at the
// start of the next line, so diagnostics about an empty value point at its key instead.
// Not assignable: YAML::Node's operator= does not rebind, it rewrites the node it refers
// to in the document (yaml-cpp's AssignNode), which silently corrupts the tree.
struct YamlEntry {
  YAML::Node key;
  YAML::Node value;
  YamlEntry& operator=(const YamlEntry&) = delete;
};

// One string of a list read by YamlReader::strings, and the item it came from.
struct YamlString {
  std::string text;
  YamlEntry entry;
};

// The entries of a checked mapping, in file order; find() returns the first of a key.
class YamlFields {
 public:
  void add(std::string name, YamlEntry entry) { entries_.emplace_back(std::move(name), entry); }
  const YamlEntry* find(std::string_view name) const;
  bool has(std::string_view name) const { return find(name) != nullptr; }

 private:
  std::vector<std::pair<std::string, YamlEntry>> entries_;
};

// The items of a list (none if it is not one), each an entry whose key is the list: an empty
// item is reported at the list.
std::vector<YamlEntry> itemsOf(const YamlEntry& list);

// The file's one YAML document. A second one (after a `---` or `...` line) would be dropped
// by YAML::Load, and with it whatever a pasted or concatenated config put there, so it is a
// YAML::ParserException at its first node; empty documents (only comments) do not count.
YAML::Node loadOneDocument(const std::string& text);

// "a mapping", "a list", "nothing", "'text'": what a node is, for "got ..." in messages.
std::string describeNode(const YAML::Node& node);

// One validation pass over one file. Not thread-safe.
// An alias is read again wherever it is used, so a few kilobytes of aliases to lists of
// aliases can stand for billions of values: a pass reads at most kMaxValues (mappings, lists
// and scalars, with their entries), then reports that one problem and reads nothing more.
class YamlReader {
 public:
  static constexpr size_t kMaxValues = 4'000'000;

  YamlReader(std::string file, Diagnostics& diagnostics)
      : file_(std::move(file)), diagnostics_(diagnostics) {}

  const std::string& file() const { return file_; }
  Diagnostics& diagnostics() { return diagnostics_; }
  size_t errorCount() const { return diagnostics_.size(); }

  void error(const YAML::Node& node, std::string message);
  void error(const YamlEntry& entry, std::string message);

  // Checks that entry.value is a mapping whose keys are all in `known`, each given once.
  // `what` names it in messages ("limit"; empty for the top level). nullopt if not a mapping
  // (reported); unknown and repeated keys are reported and left out of the fields.
  std::optional<YamlFields> mapping(const YamlEntry& entry, std::string_view what,
                                    std::initializer_list<std::string_view> known);

  // The entry of `name` in a mapping whose other keys are read by others (nullopt if it has
  // none, or is no mapping); a repeat of it is reported, as mapping() reports one.
  std::optional<YamlEntry> field(const YamlEntry& entry, std::string_view what,
                                 std::string_view name);

  // Checks that entry.value is a list; `shape` says what one looks like, for the message.
  bool list(const YamlEntry& entry, std::string_view what, std::string_view shape);

  // A non-empty scalar.
  std::optional<std::string> text(const YamlEntry& entry, std::string_view what);

  // One of `choices` (an index into them).
  std::optional<size_t> choice(const YamlEntry& entry, std::string_view what,
                               std::initializer_list<std::string_view> choices);

  std::optional<bool> boolean(const YamlEntry& entry, std::string_view what);

  // A scalar read by a units parser (parseCount, parseBitRate, parseBytes, parseDuration);
  // its error is reported as "what: message". `example` shows a valid value ("10k").
  std::optional<uint64_t> withUnit(const YamlEntry& entry, std::string_view what,
                                   Result<uint64_t> (*parse)(std::string_view),
                                   std::string_view example);

  // Diagnostics [first, errorCount()) are about another file (a CIDR list) named at `node`:
  // sortedDiagnostics() keeps them where that file is named.
  void anchorSince(size_t first, const YAML::Node& node);

  // The diagnostics in file order (line, then column), each anchored group at its anchor,
  // ties in the order found.
  std::vector<Diagnostic> sortedDiagnostics() const;

  // The same, and from min to max; `format` writes a bound in the value's units
  // (formatDuration), for "what must be from 1s to 1h, got 2d".
  std::optional<uint64_t> withUnit(const YamlEntry& entry, std::string_view what,
                                   Result<uint64_t> (*parse)(std::string_view),
                                   std::string_view example, uint64_t min, uint64_t max,
                                   std::string (*format)(uint64_t));

  // A whole number from min to max written without units.
  std::optional<int64_t> integer(const YamlEntry& entry, std::string_view what, int64_t min,
                                 int64_t max);

  // A finite decimal number (1.5, 0.001, 1e3) from min to max.
  std::optional<double> number(const YamlEntry& entry, std::string_view what, double min,
                               double max);

  // A list of non-empty strings: the strings in order, each with its item for positioning
  // what a caller finds wrong with it. Not a list: reported, nothing returned (`shape` as
  // for list()). An item that is not a non-empty string is reported as `item_what`
  // ("a method") and left out.
  std::vector<YamlString> strings(const YamlEntry& entry, std::string_view what,
                                  std::string_view shape, std::string_view item_what);

 private:
  struct AnchoredRange {
    size_t first = 0, end = 0;  // diagnostic indexes
    int line = 0, column = 0;   // 1-based position of the anchor
  };

  // "at the top level" for an empty `what`, else "in what".
  static std::string where(std::string_view what);
  void repeated(const YAML::Node& key, const std::string& name, std::string_view what,
                int first_line);

  // Counts `values` read at `node`; false (reported once) when the pass has read too much.
  bool spend(const YAML::Node& node, size_t values = 1);

  std::string file_;
  Diagnostics& diagnostics_;
  size_t values_read_ = 0;
  bool exhausted_ = false;
  std::vector<AnchoredRange> anchors_;
};

// "a, b, c": the list of what is expected, for messages.
std::string joinNames(std::initializer_list<std::string_view> names);

}  // namespace floodgate::config
