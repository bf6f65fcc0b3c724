// SPDX-License-Identifier: MIT
// `defaults:`: table sizes, what to do with odd frames, and monitor mode, for every interface.
#include "config/sections.h"
#include "controller/rule_compiler.h"
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

// link_control: unlimited, or {pps: N, burst: N} (burst: a second of the rate if not given).
void readLinkControl(YamlReader& reader, const YamlEntry& entry, LinkControlBudget& out) {
  if (entry.value.IsScalar() && entry.value.Scalar() == "unlimited") {
    out = {0, 0};
    return;
  }
  if (!entry.value.IsMap()) {
    reader.error(entry,
                 "link_control must be {pps: N} (a burst too: {pps: N, burst: N}) or "
                 "unlimited (got " +
                     describeNode(entry.value) + ")");
    return;
  }
  std::optional<YamlFields> fields = reader.mapping(entry, "link_control", {"pps", "burst"});
  if (!fields) return;
  const YamlEntry* pps = fields->find("pps");
  if (!pps) {
    reader.error(entry, "link_control needs a pps (e.g. {pps: 1k}), or write unlimited");
    return;
  }
  if (pps->value.IsScalar() && pps->value.Scalar() == "0") {
    reader.error(*pps,
                 "link_control pps must be at least 1; write link_control: unlimited for "
                 "no bound");
    return;
  }
  auto rate = reader.withUnit(*pps, "pps", parseCount, "1k");
  if (!rate) return;
  // the rate alone first, so an error is told at the key that is wrong
  LinkControlBudget budget{*rate, *rate};
  if (auto compiled = compileLinkControl({*rate, 1}); !compiled) {
    reader.error(*pps, compiled.error().message);
    return;
  }
  if (const YamlEntry* burst = fields->find("burst")) {
    auto count = reader.withUnit(*burst, "burst", parseCount, "1k");
    if (!count) return;
    budget.burst = *count;
    if (auto compiled = compileLinkControl(budget); !compiled) {
      reader.error(*burst, compiled.error().message);
      return;
    }
  }
  out = budget;
}

}  // namespace

DefaultsConfig parseDefaults(YamlReader& reader, const YamlEntry& entry) {
  DefaultsConfig out;
  if (entry.value.IsNull()) return out;
  std::optional<YamlFields> fields =
      reader.mapping(entry, "defaults",
                     {"table_size", "list_size", "malformed", "fragments", "unknown_ipv6_ext",
                      "monitor", "link_control"});
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
  if (const YamlEntry* budget = fields->find("link_control")) {
    readLinkControl(reader, *budget, out.link_control);
  }
  if (const YamlEntry* monitor = fields->find("monitor")) {
    if (auto on = reader.boolean(*monitor, "monitor")) out.monitor = *on;
  }
  return out;
}

}  // namespace floodgate::config
