// SPDX-License-Identifier: MIT
// `interfaces:`: which interfaces the config protects, and the XDP attach mode of each.
#include <algorithm>

#include "config/sections.h"
#include "floodgate/common/text.h"

namespace floodgate::config {

std::vector<InterfaceConfig> parseInterfaces(YamlReader& reader, const YamlEntry& entry) {
  std::vector<InterfaceConfig> out;
  std::vector<int> lines;  // where each name in `out` was given, for duplicates
  if (entry.value.IsNull()) return out;
  if (!reader.list(entry, "interfaces", "names or {name, mode} mappings")) {
    return out;
  }
  for (const YAML::Node& value : entry.value) {
    YamlEntry item{entry.value, value};
    InterfaceConfig interface;
    std::optional<YamlFields> fields;
    const YamlEntry* name_entry = &item;  // a bare name, or the name of a mapping
    if (value.IsMap()) {
      fields = reader.mapping(item, "interfaces entry", {"name", "mode"});
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
    }
    std::optional<std::string> name = reader.text(*name_entry, "an interface name");
    if (!name) continue;
    if (Status valid = checkInterfaceName(*name); !valid) {
      reader.error(*name_entry, valid.error().message);
      continue;
    }
    int line = name_entry->value.Mark().line + 1;
    auto first = std::find_if(out.begin(), out.end(),
                              [&](const InterfaceConfig& i) { return i.name == *name; });
    if (first != out.end()) {
      reader.error(*name_entry, "interface '" + *name + "' is listed twice (first at line " +
                                    std::to_string(lines[first - out.begin()]) + ")");
      continue;
    }
    interface.name = *name;
    out.push_back(interface);
    lines.push_back(line);
  }
  return out;
}

}  // namespace floodgate::config
