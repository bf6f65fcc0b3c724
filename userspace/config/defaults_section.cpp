// SPDX-License-Identifier: MIT
// `defaults:`: table sizes, what to do with odd frames, and monitor mode, for every interface.
#include "config/sections.h"
#include "floodgate/common/units.h"

namespace floodgate::config {
namespace {

void readPolicy(YamlReader& reader, const YamlFields& fields, const char* key, FramePolicy& out) {
  const YamlEntry* entry = fields.find(key);
  if (!entry) return;
  if (auto index = reader.choice(*entry, key, {"pass", "drop"})) {
    out = *index == 0 ? FramePolicy::kPass : FramePolicy::kDrop;
  }
}

}  // namespace

DefaultsConfig parseDefaults(YamlReader& reader, const YamlEntry& entry) {
  DefaultsConfig out;
  if (entry.value.IsNull()) return out;
  std::optional<YamlFields> fields = reader.mapping(
      entry, "defaults",
      {"table_size", "list_size", "malformed", "fragments", "unknown_ipv6_ext", "monitor"});
  if (!fields) return out;
  if (const YamlEntry* size = fields->find("table_size")) {
    if (auto slots = reader.withUnit(*size, "table_size", parseCount, "262144")) {
      // the limits are the controller's (validate), said here with the file's position
      if (!validTableSlots(*slots)) {
        reader.error(*size,
                     "table_size must be " + tableSlotsLimit() + ", got " + std::to_string(*slots));
      } else {
        out.table_slots = static_cast<uint32_t>(*slots);
      }
    }
  }
  if (const YamlEntry* size = fields->find("list_size")) {
    if (auto entries = reader.withUnit(*size, "list_size", parseCount, "262144")) {
      if (*entries > FG_LARGEST_LIST_ENTRIES) {
        reader.error(*size, "list_size must be at most " + std::to_string(FG_LARGEST_LIST_ENTRIES) +
                                ", got " + std::to_string(*entries));
      } else {
        out.list_max_entries = static_cast<uint32_t>(*entries);
      }
    }
  }
  readPolicy(reader, *fields, "malformed", out.malformed);
  readPolicy(reader, *fields, "fragments", out.fragments);
  readPolicy(reader, *fields, "unknown_ipv6_ext", out.unknown_ext);
  if (const YamlEntry* monitor = fields->find("monitor")) {
    if (auto on = reader.boolean(*monitor, "monitor")) out.monitor = *on;
  }
  return out;
}

}  // namespace floodgate::config
