// SPDX-License-Identifier: MIT
// An interface's `adaptive:` section: capacity, floors of named rules, step and timing,
// checked against the rules it names (so it is read after `rules:`).
#include <algorithm>
#include <sstream>

#include "config/sections.h"
#include "controller/rule_compiler.h"
#include "floodgate/common/units.h"

namespace floodgate::config {
namespace {

constexpr uint64_t kMinIntervalNs = 100'000'000;          // 100ms: a few of the loop's turns
constexpr uint64_t kMaxIntervalNs = 3600'000'000'000;     // 1h
constexpr uint64_t kMaxRelaxAfterNs = 86400'000'000'000;  // 1d
constexpr double kMinFactor = 0.05;
constexpr double kMaxFactor = 0.95;

const RuleSpec* findRule(const std::vector<RuleSpec>& rules, const std::string& name) {
  for (const RuleSpec& rule : rules) {
    if (rule.name == name) return &rule;
  }
  return nullptr;
}

std::string ruleNames(const std::vector<RuleSpec>& rules) {
  std::string names;
  for (const RuleSpec& rule : rules) names += (names.empty() ? "" : ", ") + rule.name;
  return names.empty() ? "none" : names;
}

// `value` scaled by floor_rate / rate, at least `least`: a burst that keeps its rule's
// ratio to its rate.
uint64_t proportional(uint64_t value, uint64_t floor_rate, uint64_t rate, uint64_t least) {
  if (rate == 0) return least;
  auto scaled = static_cast<uint64_t>(static_cast<unsigned __int128>(value) * floor_rate / rate);
  return std::max(scaled, least);
}

class AdaptiveParser {
 public:
  AdaptiveParser(YamlReader& reader, const std::vector<RuleSpec>& rules, bool rules_complete)
      : reader_(reader), rules_(rules), rules_complete_(rules_complete) {}

  std::optional<AdaptiveConfig> parse(const YamlEntry& entry) {
    const size_t errors_before = reader_.errorCount();
    std::optional<YamlFields> fields =
        reader_.mapping(entry, "adaptive",
                        {"capacity", "floors", "step", "interval", "relax_below", "relax_after"});
    if (!fields) return std::nullopt;
    if (const YamlEntry* capacity = fields->find("capacity")) {
      parseCapacity(*capacity);
    } else {
      reader_.error(entry.key,
                    "adaptive needs a capacity: the passed load the host can take (e.g. "
                    "capacity: {pps: 200k})");
    }
    if (const YamlEntry* floors = fields->find("floors")) {
      parseFloors(*floors);
    } else {
      reader_.error(entry.key,
                    "adaptive needs floors: the rules it may tighten and the lowest limits of "
                    "each (e.g. floors: {per-source: {pps: 100}})");
    }
    parseTiming(*fields);
    if (reader_.errorCount() != errors_before) return std::nullopt;
    return config_;
  }

 private:
  void parseCapacity(const YamlEntry& entry) {
    std::optional<YamlFields> fields = reader_.mapping(entry, "adaptive.capacity", {"pps", "bps"});
    if (!fields) return;
    const YamlEntry* pps = fields->find("pps");
    const YamlEntry* bps = fields->find("bps");
    if (!pps && !bps) {
      reader_.error(entry, "adaptive.capacity needs pps and/or bps (e.g. {pps: 200k})");
      return;
    }
    const char* zero = " must be above 0: it is the load the host can take";
    if (pps) {
      if (auto value = reader_.withUnit(*pps, "adaptive.capacity.pps", parseCount, "200k")) {
        if (*value == 0) reader_.error(*pps, std::string("adaptive.capacity.pps") + zero);
        config_.capacity_pps = *value;
      }
    }
    if (bps) {
      if (auto value = reader_.withUnit(*bps, "adaptive.capacity.bps", parseBitRate, "1Gbit")) {
        if (*value == 0) reader_.error(*bps, std::string("adaptive.capacity.bps") + zero);
        config_.capacity_bps = *value;
      }
    }
  }

  void parseFloors(const YamlEntry& entry) {
    const std::string shape =
        "map at least one rule name to its floor (e.g. {per-source: {pps: 100}})";
    if (!entry.value.IsMap()) {
      reader_.error(entry, "adaptive.floors must " + shape + ", got " + describeNode(entry.value));
      return;
    }
    if (entry.value.size() == 0) {
      reader_.error(entry, "adaptive.floors names no rule: " + shape);
      return;
    }
    for (auto it = entry.value.begin(); it != entry.value.end(); ++it) {
      YamlEntry item{it->first, it->second};
      std::optional<std::string> name = reader_.text({entry.value, it->first}, "a rule name");
      if (!name) continue;
      auto seen = std::find_if(config_.floors.begin(), config_.floors.end(),
                               [&](const AdaptiveFloor& f) { return f.rule == *name; });
      if (seen != config_.floors.end()) {
        reader_.error(it->first, "adaptive.floors names rule '" + *name + "' twice");
        continue;
      }
      const RuleSpec* rule = findRule(rules_, *name);
      if (!rule) {
        // A rule with errors of its own is missing here; those errors say enough.
        if (rules_complete_) {
          reader_.error(it->first, "adaptive.floors names '" + *name +
                                       "', which is not a rule of this config (rules: " +
                                       ruleNames(rules_) + ")");
        }
        continue;
      }
      parseFloor(item, *rule);
    }
  }

  void parseFloor(const YamlEntry& item, const RuleSpec& rule) {
    const std::string what = "adaptive.floors." + rule.name;
    std::optional<YamlFields> fields =
        reader_.mapping(item, what, {"pps", "burst", "bps", "burst_bytes"});
    if (!fields) return;
    const size_t errors_before = reader_.errorCount();
    AdaptiveFloor floor{rule.name, {}};
    LimitSpec& out = floor.floor;
    const LimitSpec& limit = rule.limit;
    struct Part {
      const char* key;
      Result<uint64_t> (*parse)(std::string_view);
      const char* example;
      uint64_t configured;
      uint64_t* value;
      std::string (*format)(uint64_t);
    };
    const Part parts[] = {
        {"pps", parseCount, "100", limit.pps, &out.pps, formatCount},
        {"burst", parseCount, "10", limit.burst, &out.burst, formatCount},
        {"bps", parseBitRate, "10Mbit", limit.bits_per_s, &out.bits_per_s, formatBitRate},
        {"burst_bytes", parseBytes, "64KiB", limit.burst_bytes, &out.burst_bytes, formatCount},
    };
    for (const Part& part : parts) {
      const YamlEntry* value = fields->find(part.key);
      if (!value) continue;
      auto parsed = reader_.withUnit(*value, what + "." + part.key, part.parse, part.example);
      if (!parsed) continue;
      if (part.configured == 0) {
        reader_.error(value->key, "rule '" + rule.name + "' has no " + part.key +
                                      " limit, so it has no " + part.key + " floor");
      } else if (*parsed == 0) {
        reader_.error(*value, what + "." + part.key + " must be above 0");
      } else if (*parsed > part.configured) {
        reader_.error(*value, what + "." + part.key + " (" + part.format(*parsed) +
                                  ") is above the rule's own limit (" +
                                  part.format(part.configured) + "): a floor is at most the limit");
      } else {
        *part.value = *parsed;
      }
    }
    if (reader_.errorCount() != errors_before) return;
    if (!fields->has("pps") && !fields->has("bps")) {
      reader_.error(item, what +
                              " needs pps and/or bps: the lowest rate the rule may be "
                              "squeezed to (e.g. {pps: 100})");
      return;
    }
    if ((fields->has("burst") && !out.pps) || (fields->has("burst_bytes") && !out.bits_per_s)) {
      reader_.error(item, what + ": a burst floor goes with a floor of its rate");
      return;
    }
    if (out.pps && !out.burst) out.burst = proportional(limit.burst, out.pps, limit.pps, 1);
    if (out.bits_per_s && !out.burst_bytes) {
      out.burst_bytes = std::min(limit.burst_bytes, proportional(limit.burst_bytes, out.bits_per_s,
                                                                 limit.bits_per_s, kMinBurstBytes));
    }
    // The floor is a limit the program will run: it must compile like any other.
    RuleSpec squeezed = rule;
    if (out.pps) squeezed.limit.pps = out.pps, squeezed.limit.burst = out.burst;
    if (out.bits_per_s) {
      squeezed.limit.bits_per_s = out.bits_per_s;
      squeezed.limit.burst_bytes = out.burst_bytes;
    }
    if (Result<fg_rule> compiled = compileRule(squeezed); !compiled) {
      reader_.error(item, what + " cannot be run: " + compiled.error().message);
      return;
    }
    config_.floors.push_back(std::move(floor));
  }

  void parseTiming(const YamlFields& fields) {
    const size_t errors_before = reader_.errorCount();
    if (const YamlEntry* step = fields.find("step")) {
      if (auto value = reader_.number(*step, "adaptive.step", kMinFactor, kMaxFactor)) {
        config_.step = *value;
      }
    }
    if (const YamlEntry* interval = fields.find("interval")) {
      if (auto value = reader_.withUnit(*interval, "adaptive.interval", parseDuration, "1s",
                                        kMinIntervalNs, kMaxIntervalNs, formatDuration)) {
        config_.interval_ns = *value;
      }
    }
    config_.relax_below = config_.step;
    const YamlEntry* relax_below = fields.find("relax_below");
    if (relax_below) {
      if (auto value =
              reader_.number(*relax_below, "adaptive.relax_below", kMinFactor, kMaxFactor)) {
        config_.relax_below = *value;
      }
    }
    const YamlEntry* relax_after = fields.find("relax_after");
    if (relax_after) {
      if (auto value = reader_.withUnit(*relax_after, "adaptive.relax_after", parseDuration, "30s",
                                        kMinIntervalNs, kMaxRelaxAfterNs, formatDuration)) {
        config_.relax_after_ns = *value;
      }
    }
    // How the values go together, once each is valid on its own.
    if (reader_.errorCount() != errors_before) return;
    if (config_.relax_below > config_.step) {
      reader_.error(*relax_below,
                    "adaptive.relax_below (" + relax_below->value.Scalar() +
                        ") must be at most adaptive.step (" + showFactor(config_.step) +
                        "): a relax step divides the limits by step, so only a load below "
                        "capacity × step surely stays under capacity after it");
    }
    if (config_.relax_after_ns < config_.interval_ns) {
      reader_.error(relax_after ? *relax_after : *fields.find("interval"),
                    "adaptive.relax_after (" + formatDuration(config_.relax_after_ns) +
                        ") must be at least adaptive.interval (" +
                        formatDuration(config_.interval_ns) +
                        "): the load is measured once an interval");
    }
  }

  static std::string showFactor(double factor) {
    std::ostringstream out;
    out.precision(6);
    out << factor;
    return out.str();
  }

  YamlReader& reader_;
  const std::vector<RuleSpec>& rules_;
  bool rules_complete_;
  AdaptiveConfig config_;
};

}  // namespace

std::optional<AdaptiveConfig> parseAdaptive(YamlReader& reader, const YamlEntry& entry,
                                            const std::vector<RuleSpec>& rules,
                                            bool rules_complete) {
  return AdaptiveParser(reader, rules, rules_complete).parse(entry);
}

}  // namespace floodgate::config
