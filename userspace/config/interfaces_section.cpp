// SPDX-License-Identifier: MIT
// `interfaces:`: which interfaces the config protects, the XDP attach mode of each, and
// its `adaptive:` section (adaptive_section.cpp).
#include <algorithm>
#include <cstdint>
#include <map>

#include "config/sections.h"
#include "floodgate/common/text.h"

namespace floodgate::config {
namespace {

// An absolute path: the daemon's working directory is nobody's business.
std::optional<std::string> absolutePath(YamlReader& reader, const YamlEntry& entry,
                                        std::string_view what) {
  std::optional<std::string> path = reader.text(entry, what);
  if (path && path->front() != '/') {
    reader.error(entry, std::string(what) + " must be an absolute path, not '" + *path + "'");
    return std::nullopt;
  }
  return path;
}

// `next: {object: PATH, section: NAME}`, `next: {pinned: PATH}` or `next: none`.
std::optional<NextProgramSpec> parseNext(YamlReader& reader, const YamlEntry& entry) {
  if (entry.value.IsScalar() && entry.value.Scalar() == "none") return NextProgramSpec{};
  if (!entry.value.IsMap()) {
    reader.error(entry, "next must be {object: PATH, section: NAME}, {pinned: PATH} or none, got " +
                            describeNode(entry.value));
    return std::nullopt;
  }
  auto fields = reader.mapping(entry, "next", {"object", "section", "pinned"});
  if (!fields) return std::nullopt;
  NextProgramSpec spec;
  const YamlEntry* object = fields->find("object");
  const YamlEntry* pinned = fields->find("pinned");
  if ((object != nullptr) == (pinned != nullptr)) {
    reader.error(entry,
                 "next needs one of object (a BPF object file) and pinned (a pinned program)");
    return std::nullopt;
  }
  if (object) {
    auto path = absolutePath(reader, *object, "next.object");
    if (!path) return std::nullopt;
    spec.object = *path;
  }
  if (pinned) {
    auto path = absolutePath(reader, *pinned, "next.pinned");
    if (!path) return std::nullopt;
    spec.pinned = *path;
  }
  if (const YamlEntry* section = fields->find("section")) {
    if (pinned) {
      reader.error(*section, "next.section goes with next.object, not with next.pinned");
      return std::nullopt;
    }
    auto name = reader.text(*section, "next.section");
    if (!name) return std::nullopt;
    spec.section = *name;
  }
  return spec;
}

// `into_prog_array: {path: PATH, slot: N}`.
bool parseIntoProgArray(YamlReader& reader, const YamlEntry& entry, InterfaceConfig& out) {
  auto fields = reader.mapping(entry, "into_prog_array", {"path", "slot"});
  if (!fields) return false;
  const YamlEntry* path = fields->find("path");
  const YamlEntry* slot = fields->find("slot");
  if (!path || !slot) {
    reader.error(entry,
                 "into_prog_array needs a path and a slot, e.g. {path: "
                 "/sys/fs/bpf/root_array, slot: 1}");
    return false;
  }
  auto where = absolutePath(reader, *path, "into_prog_array.path");
  auto index = reader.integer(*slot, "into_prog_array.slot", 0, UINT32_MAX);
  if (!where || !index) return false;
  out.root_prog_array = *where;
  out.root_slot = static_cast<uint32_t>(*index);
  return true;
}

constexpr size_t kMaxInterfaces = 4096;

}  // namespace

std::vector<InterfaceConfig> parseInterfaces(YamlReader& reader, const YamlEntry& entry,
                                             const std::vector<RuleSpec>& rules,
                                             bool rules_complete) {
  std::vector<InterfaceConfig> out;
  std::map<std::string, int> lines;  // where each name in `out` was given, for duplicates
  if (entry.value.IsNull()) return out;
  if (!reader.list(entry, "interfaces", "names or {name, mode} mappings")) {
    return out;
  }
  // far more than a host attaches XDP to; a list longer still is a mistake or an attack on
  // the daemon, whose every apply goes through each one
  if (entry.value.size() > kMaxInterfaces) {
    reader.error(entry, "interfaces lists " + std::to_string(entry.value.size()) +
                            " interfaces, more than the " + std::to_string(kMaxInterfaces) +
                            " floodgate takes: list only the interfaces to protect");
    return out;
  }
  for (const YAML::Node& value : entry.value) {
    YamlEntry item{entry.value, value};
    InterfaceConfig interface;
    std::optional<YamlFields> fields;
    const YamlEntry* name_entry = &item;  // a bare name, or the name of a mapping
    if (value.IsMap()) {
      fields = reader.mapping(item, "interfaces entry",
                              {"name", "mode", "next", "into_prog_array", "adaptive"});
      if (!fields) continue;
      name_entry = fields->find("name");
      if (!name_entry) {
        reader.error(item, "interfaces entry needs a name (e.g. {name: eth0, mode: auto})");
        continue;
      }
      if (const YamlEntry* mode = fields->find("mode")) {
        static constexpr XdpMode kModes[] = {XdpMode::kAuto, XdpMode::kNative, XdpMode::kGeneric};
        if (auto index = reader.choice(*mode, "mode", {"auto", "native", "generic"})) {
          interface.mode = kModes[*index];
        }
      }
      if (const YamlEntry* next = fields->find("next")) interface.next = parseNext(reader, *next);
      if (const YamlEntry* into = fields->find("into_prog_array")) {
        parseIntoProgArray(reader, *into, interface);
        if (fields->has("mode")) {
          reader.error(*into,
                       "into_prog_array runs floodgate where its root program runs: drop mode");
        }
      }
      if (const YamlEntry* adaptive = fields->find("adaptive")) {
        interface.adaptive = parseAdaptive(reader, *adaptive, rules, rules_complete);
      }
    }
    std::optional<std::string> name = reader.text(*name_entry, "an interface name");
    if (!name) continue;
    if (Status valid = checkInterfaceName(*name); !valid) {
      reader.error(*name_entry, valid.error().message);
      continue;
    }
    const int line = name_entry->value.Mark().line + 1;
    if (auto [first, added] = lines.emplace(*name, line); !added) {
      reader.error(*name_entry, "interface '" + *name + "' is listed twice (first at line " +
                                    std::to_string(first->second) + ")");
      continue;
    }
    interface.name = *name;
    out.push_back(interface);
  }
  return out;
}

}  // namespace floodgate::config
