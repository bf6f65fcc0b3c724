// SPDX-License-Identifier: MIT
// `rules:`: each rule's name, key, limit, algorithm and action into a RuleSpec, checked here
// with positions first and by compileRule second.
#include <algorithm>
#include <cctype>
#include <charconv>

#include "config/rule_parts.h"
#include "config/sections.h"
#include "controller/rule_compiler.h"
#include "floodgate/common/units.h"
#include "floodgate_shared.h"

namespace floodgate::config {
namespace {

constexpr uint64_t kNsPerMs = 1000000;
constexpr uint64_t kMaxWindowNs = 3600ULL * 1000000000;  // 1h
constexpr uint64_t kMinBanNs = 1000000000ULL;            // 1s
// Bucket time (ns << FG_TIME_SHIFT) wraps after 2^48 ns, about 3.26 days; a ban must end
// well before an expiry time could be mistaken for one in the past.
constexpr uint64_t kMaxBanNs = 86400ULL * 1000000000;  // 1d

bool isNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
}

const char* algorithmName(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kTokenBucket:
      return "token_bucket";
    case Algorithm::kFixedWindow:
      return "fixed_window";
    case Algorithm::kSlidingWindow:
      return "sliding_window";
  }
  return "?";
}

struct NameSeen {
  std::string name;
  int line = 0;
};

// One rule; `names` holds the rules before it, for duplicates.
class RuleParser {
 public:
  RuleParser(YamlReader& reader, const std::string& base_dir, std::vector<NameSeen>& names)
      : reader_(reader), base_dir_(base_dir), names_(names) {}

  std::optional<RuleSpec> parse(const YamlEntry& item);

 private:
  void parseName(const YamlFields& fields, const YamlEntry& item);
  void parseKey(const YamlEntry& entry);
  bool parseAlgorithm(const YamlFields& fields);
  void parseLimit(const YamlEntry& entry);
  // The rates and bursts of `fields` into `limit`; `what` names the mapping in errors.
  void parseLimitFields(const YamlEntry& entry, const YamlFields& fields, LimitSpec& limit,
                        const char* what);
  void parseUntracked(const YamlEntry& entry);
  void parseReturningSources(const YamlFields& fields);
  // "rule 'dns'", or "rule" while the name is missing or wrong.
  std::string label() const { return named_ ? "rule '" + spec_.name + "'" : "rule"; }
  void checkWindowCapacity(const YamlFields& fields, const LimitSpec& limit);
  void parseAction(const YamlEntry& entry);
  void parseSynCookies(const YamlEntry& entry);

  YamlReader& reader_;
  const std::string& base_dir_;
  std::vector<NameSeen>& names_;
  RuleSpec spec_;
  bool named_ = false;
  // False after an unknown `algorithm:`: the limit's values are still read, but not judged
  // against an algorithm (that would be a guess).
  bool algorithm_known_ = true;
  // where untracked.verified_sources is set, which only a rule with SYN cookies uses
  std::optional<YamlEntry> verified_sources_;
};

std::optional<RuleSpec> RuleParser::parse(const YamlEntry& item) {
  const size_t errors_before = reader_.errorCount();
  std::optional<YamlFields> fields =
      reader_.mapping(item, "rule",
                      {"name", "match", "key", "limit", "untracked", "algorithm", "window",
                       "on_exceed", "syn_cookies"});
  if (!fields) return std::nullopt;
  parseName(*fields, item);
  if (const YamlEntry* match = fields->find("match")) parseMatch(reader_, *match, base_dir_, spec_);
  if (const YamlEntry* key = fields->find("key")) parseKey(*key);
  algorithm_known_ = parseAlgorithm(*fields);
  if (const YamlEntry* limit = fields->find("limit")) {
    parseLimit(*limit);
  } else {
    reader_.error(item, label() + " needs a limit (e.g. limit: {pps: 10k})");
  }
  if (const YamlEntry* untracked = fields->find("untracked")) parseUntracked(*untracked);
  if (const YamlEntry* action = fields->find("on_exceed")) parseAction(*action);
  if (const YamlEntry* cookies = fields->find("syn_cookies")) parseSynCookies(*cookies);
  if (verified_sources_ && spec_.syn_cookies == SynCookies::kOff) {
    // compiled without cookies, the cap would be dropped without a word
    reader_.error(*verified_sources_,
                  label() +
                      ": untracked.verified_sources caps the sources SYN cookies verify, "
                      "and this rule has none: remove it, or set syn_cookies: always or "
                      "auto");
  }
  if (reader_.errorCount() != errors_before) return std::nullopt;

  // compileRule is the program's own contract; a rule this parser let through and it
  // refuses is still reported, at the rule.
  if (Result<fg_rule> compiled = compileRule(spec_); !compiled) {
    // its messages name the rule already, for callers without a file position
    std::string message = compiled.error().message;
    const std::string named = label() + ": ";
    if (message.rfind(named, 0) == 0) message.erase(0, named.size());
    reader_.error(item, named + message);
    return std::nullopt;
  }
  return spec_;
}

void RuleParser::parseName(const YamlFields& fields, const YamlEntry& item) {
  const YamlEntry* entry = fields.find("name");
  if (!entry) {
    reader_.error(item, "rule needs a name (1 to " + std::to_string(FG_RULE_NAME_LEN - 1) +
                            " letters, digits, '_', '-' or '.')");
    return;
  }
  std::optional<std::string> name = reader_.text(*entry, "rule name");
  if (!name) return;
  if (name->size() >= FG_RULE_NAME_LEN) {
    reader_.error(*entry, "rule name '" + *name + "' is " + std::to_string(name->size()) +
                              " characters long; at most " + std::to_string(FG_RULE_NAME_LEN - 1) +
                              " fit");
    return;
  }
  if (!std::all_of(name->begin(), name->end(), isNameChar)) {
    reader_.error(*entry, "rule name '" + *name +
                              "' may only hold letters, digits, '_', '-' and '.' (it is a metric "
                              "label and a command-line argument)");
    return;
  }
  auto first = std::find_if(names_.begin(), names_.end(),
                            [&](const NameSeen& seen) { return seen.name == *name; });
  if (first != names_.end()) {
    reader_.error(*entry, "rule name '" + *name + "' is used twice (first at line " +
                              std::to_string(first->line) + "); names must be unique");
    return;
  }
  names_.push_back({*name, entry->value.Mark().line + 1});
  spec_.name = *name;
  named_ = true;
}

void RuleParser::parseKey(const YamlEntry& entry) {
  static constexpr KeyKind kKinds[] = {KeyKind::kSource, KeyKind::kGlobal};
  if (entry.value.IsScalar()) {
    if (auto index = reader_.choice(entry, "key", {"source", "global"})) spec_.key = kKinds[*index];
    return;
  }
  if (!entry.value.IsMap()) {
    reader_.error(entry,
                  "key must be source, global or {type: source, ipv4_prefix: N, "
                  "ipv6_prefix: N} (got " +
                      describeNode(entry.value) + ")");
    return;
  }
  std::optional<YamlFields> fields =
      reader_.mapping(entry, "key", {"type", "ipv4_prefix", "ipv6_prefix"});
  if (!fields) return;
  if (const YamlEntry* type = fields->find("type")) {
    if (auto index = reader_.choice(*type, "key type", {"source", "global"})) {
      spec_.key = kKinds[*index];
    }
  }
  struct Prefix {
    const char* name;
    int64_t max;
    uint8_t& out;
  };
  for (Prefix prefix : {Prefix{"ipv4_prefix", 32, spec_.ipv4_prefix},
                        Prefix{"ipv6_prefix", 128, spec_.ipv6_prefix}}) {
    const YamlEntry* value = fields->find(prefix.name);
    if (!value) continue;
    if (spec_.key == KeyKind::kGlobal) {
      reader_.error(value->key, std::string(prefix.name) +
                                    " goes with type: source (a global key is one bucket for "
                                    "everything the rule matches)");
      continue;
    }
    if (auto bits = reader_.integer(*value, prefix.name, 1, prefix.max)) {
      prefix.out = static_cast<uint8_t>(*bits);
    }
  }
}

// The algorithm, and its window when it has one; false when the algorithm is unknown, so
// the limit is not judged against the wrong one (its values are still read).
bool RuleParser::parseAlgorithm(const YamlFields& fields) {
  static constexpr Algorithm kAlgorithms[] = {Algorithm::kTokenBucket, Algorithm::kFixedWindow,
                                              Algorithm::kSlidingWindow};
  if (const YamlEntry* algorithm = fields.find("algorithm")) {
    auto index =
        reader_.choice(*algorithm, "algorithm", {"token_bucket", "fixed_window", "sliding_window"});
    if (!index) return false;
    spec_.algorithm = kAlgorithms[*index];
  }
  const YamlEntry* window = fields.find("window");
  if (!window) return true;
  if (spec_.algorithm == Algorithm::kTokenBucket) {
    reader_.error(window->key,
                  "window goes with algorithm fixed_window or sliding_window (token_bucket takes "
                  "a burst instead)");
    return true;
  }
  std::optional<uint64_t> ns = reader_.withUnit(*window, "window", parseDuration, "1s");
  if (!ns) return true;
  if (*ns % kNsPerMs != 0 || *ns > kMaxWindowNs) {
    reader_.error(
        *window, "window must be whole milliseconds from 1ms to 1h, got " + window->value.Scalar());
    return true;
  }
  spec_.window_ns = *ns;
  return true;
}

void RuleParser::parseLimit(const YamlEntry& entry) {
  std::optional<YamlFields> fields =
      reader_.mapping(entry, "limit", {"pps", "bps", "burst", "burst_bytes"});
  if (!fields) return;
  parseLimitFields(entry, *fields, spec_.limit, "limit");
}

// untracked: {new_sources: N, verified_sources: N, returning_sources: N, remember_for: D,
//             remember: seen|connected, pps: .., burst: .., bps: .., burst_bytes: ..}
void RuleParser::parseUntracked(const YamlEntry& entry) {
  std::optional<YamlFields> fields =
      reader_.mapping(entry, "untracked",
                      {"new_sources", "verified_sources", "returning_sources", "remember_for",
                       "remember", "pps", "bps", "burst", "burst_bytes"});
  if (!fields) return;
  if (spec_.key != KeyKind::kSource) {
    reader_.error(entry.key,
                  "untracked goes with key: source (a global rule is one bucket already)");
    return;
  }
  if (const YamlEntry* cap = fields->find("new_sources")) {
    const std::string text = cap->value.IsScalar() ? cap->value.Scalar() : std::string();
    if (text == "unlimited") {
      spec_.new_sources_per_s = 0;
    } else if (text == "0") {
      reader_.error(*cap, "new_sources must be at least 1 a second; write unlimited for no cap");
    } else if (auto value = reader_.withUnit(*cap, "new_sources", parseCount, "10k")) {
      spec_.new_sources_per_s = *value;
    }
  }
  if (const YamlEntry* cap = fields->find("verified_sources")) {
    verified_sources_.emplace(*cap);
    const std::string text = cap->value.IsScalar() ? cap->value.Scalar() : std::string();
    if (text == "unlimited") {
      spec_.verified_sources_per_s = 0;
    } else if (text == "0") {
      reader_.error(*cap,
                    "verified_sources must be at least 1 a second; write unlimited for no cap");
    } else if (auto value = reader_.withUnit(*cap, "verified_sources", parseCount, "10k")) {
      spec_.verified_sources_per_s = *value;
    }
  }
  parseReturningSources(*fields);
  if (fields->find("pps") || fields->find("bps")) {
    parseLimitFields(entry, *fields, spec_.untracked, "untracked");
  } else if (fields->find("burst") || fields->find("burst_bytes")) {
    reader_.error(entry, "untracked sets a burst without a rate: give pps and/or bps");
  }
}

// returning_sources: N a second, unlimited, or off (nothing remembered); remember_for: D;
// remember: seen (every source seen good twice) or connected (only those with a TCP
// connection to this host; compileRule checks that the rule matches TCP).
void RuleParser::parseReturningSources(const YamlFields& fields) {
  if (const YamlEntry* cap = fields.find("returning_sources")) {
    const std::string text = cap->value.IsScalar() ? cap->value.Scalar() : std::string();
    if (text == "unlimited") {
      spec_.returning_sources_per_s = 0;
    } else if (text == "off") {
      spec_.remember_ns = 0;
    } else if (text == "0") {
      reader_.error(*cap,
                    "returning_sources must be at least 1 a second; write unlimited for no cap "
                    "or off to remember no source");
    } else if (auto value = reader_.withUnit(*cap, "returning_sources", parseCount, "10k")) {
      spec_.returning_sources_per_s = *value;
    }
  }
  if (const YamlEntry* remember = fields.find("remember_for")) {
    if (spec_.remember_ns == 0) {
      reader_.error(*remember, "remember_for goes with returning_sources other than off");
    } else if (auto ns = reader_.withUnit(*remember, "remember_for", parseDuration, "1h")) {
      if (*ns > kMaxRememberNs) {
        reader_.error(*remember, "remember_for is at most 1d, e.g. 1h");
      } else {
        spec_.remember_ns = *ns;
      }
    }
  }
  if (const YamlEntry* remember = fields.find("remember")) {
    const std::string text = remember->value.IsScalar() ? remember->value.Scalar() : std::string();
    if (spec_.remember_ns == 0) {
      reader_.error(*remember, "remember goes with returning_sources other than off");
    } else if (text == "seen") {
      spec_.remember_connected = false;
    } else if (text == "connected") {
      spec_.remember_connected = true;
    } else {
      reader_.error(*remember, "remember must be seen or connected");
    }
  }
}

void RuleParser::parseLimitFields(const YamlEntry& entry, const YamlFields& fields,
                                  LimitSpec& limit, const char* what) {
  const bool windowed = spec_.algorithm != Algorithm::kTokenBucket;
  const YamlEntry* pps = fields.find("pps");
  const YamlEntry* bps = fields.find("bps");
  const YamlEntry* burst = fields.find("burst");
  const YamlEntry* burst_bytes = fields.find("burst_bytes");
  size_t errors_before = reader_.errorCount();

  if (!pps && !bps) {
    reader_.error(entry, std::string(what) + " needs pps and/or bps (e.g. {pps: 10k})");
  }
  if (!algorithm_known_) {
    // Each value on its own, so that a bad algorithm name hides no other mistake.
    if (pps) reader_.withUnit(*pps, "pps", parseCount, "10k");
    if (bps) reader_.withUnit(*bps, "bps", parseBitRate, "100Mbit");
    if (burst) reader_.withUnit(*burst, "burst", parseCount, "2k");
    if (burst_bytes) reader_.withUnit(*burst_bytes, "burst_bytes", parseBytes, "64KiB");
    return;
  }
  if (pps) {
    if (auto value = reader_.withUnit(*pps, "pps", parseCount, "10k")) limit.pps = *value;
  }
  if (bps) {
    if (spec_.algorithm == Algorithm::kSlidingWindow) {
      reader_.error(bps->key,
                    "sliding_window limits packets only (its counters are 20 bits): use pps, or "
                    "token_bucket or fixed_window for bps");
    } else if (auto value = reader_.withUnit(*bps, "bps", parseBitRate, "100Mbit")) {
      limit.bits_per_s = *value;
    }
  }
  if (burst) {
    if (windowed) {
      reader_.error(burst->key, std::string(algorithmName(spec_.algorithm)) +
                                    " takes no burst: a window admits pps * window packets");
    } else if (!pps) {
      reader_.error(burst->key, "burst goes with pps (it is a number of packets)");
    } else {
      int64_t number = 0;
      const std::string text = burst->value.IsScalar() ? burst->value.Scalar() : std::string();
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
      if (ec == std::errc() && end == text.data() + text.size() && !text.empty() && number < 1) {
        reader_.error(*burst, "burst must be at least 1 packet, got " + text);
      } else if (auto value = reader_.withUnit(*burst, "burst", parseCount, "2k")) {
        limit.burst = *value;
      }
    }
  }
  if (burst_bytes) {
    if (windowed) {
      reader_.error(burst_bytes->key, std::string(algorithmName(spec_.algorithm)) +
                                          " takes no burst_bytes: a window admits bps * window "
                                          "bits");
    } else if (!bps) {
      reader_.error(burst_bytes->key, "burst_bytes goes with bps (it is a number of bytes)");
    } else if (auto value = reader_.withUnit(*burst_bytes, "burst_bytes", parseBytes, "64KiB")) {
      if (*value < kMinBurstBytes) {
        reader_.error(*burst_bytes, "burst_bytes must be at least " +
                                        std::to_string(kMinBurstBytes) +
                                        " (one full-size frame), got " + std::to_string(*value));
      } else {
        limit.burst_bytes = *value;
      }
    }
  }
  // The bursts a window algorithm ignores still get their defaults, so a rule reads the same
  // whichever algorithm it later switches to.
  if (limit.pps && !limit.burst) limit.burst = defaultBurst(limit.pps);
  if (limit.bits_per_s && !limit.burst_bytes)
    limit.burst_bytes = defaultBurstBytes(limit.bits_per_s);
  if (windowed && reader_.errorCount() == errors_before) checkWindowCapacity(fields, limit);
}

// What one window admits must fit the program's counters and let at least one frame through.
void RuleParser::checkWindowCapacity(const YamlFields& fields, const LimitSpec& limit) {
  const unsigned __int128 window_ms = spec_.window_ns / kNsPerMs;
  const std::string window = formatDuration(spec_.window_ns);
  if (const YamlEntry* pps = fields.find("pps")) {
    unsigned __int128 per_window_x1000 = static_cast<unsigned __int128>(limit.pps) * window_ms;
    const uint64_t max =
        spec_.algorithm == Algorithm::kSlidingWindow ? FG_SLIDING_COUNT_MAX : FG_FIXED_COUNT_MASK;
    if (per_window_x1000 < 1000) {
      reader_.error(*pps, "pps * window admits no packet in a " + window +
                              " window: raise pps or lengthen the window");
    } else if (per_window_x1000 / 1000 > max) {
      reader_.error(*pps, std::string(algorithmName(spec_.algorithm)) + " counts at most " +
                              std::to_string(max) + " packets per window, and pps * window is " +
                              std::to_string(static_cast<uint64_t>(per_window_x1000 / 1000)) +
                              ": lower pps or shorten the window");
    }
  }
  if (const YamlEntry* bps = fields.find("bps")) {
    unsigned __int128 bytes = static_cast<unsigned __int128>(limit.bits_per_s) * window_ms / 8000;
    if (bytes < kMinBurstBytes) {
      reader_.error(*bps, "bps * window admits " + std::to_string(static_cast<uint64_t>(bytes)) +
                              " bytes in a " + window + " window, less than one full-size frame (" +
                              std::to_string(kMinBurstBytes) +
                              "): raise bps or lengthen the window");
    } else if (bytes > FG_FIXED_COUNT_MASK) {
      reader_.error(*bps, "fixed_window counts at most " + std::to_string(FG_FIXED_COUNT_MASK) +
                              " bytes per window: lower bps or shorten the window");
    }
  }
}

// syn_cookies: off | always | auto (compileRule checks that the rule matches TCP SYNs)
void RuleParser::parseSynCookies(const YamlEntry& entry) {
  const std::string text = entry.value.IsScalar() ? entry.value.Scalar() : std::string();
  if (text == "off" || text == "false") {
    spec_.syn_cookies = SynCookies::kOff;
  } else if (text == "always") {
    spec_.syn_cookies = SynCookies::kAlways;
  } else if (text == "auto") {
    spec_.syn_cookies = SynCookies::kAuto;
  } else {
    reader_.error(entry, "syn_cookies must be off, always or auto");
  }
}

void RuleParser::parseAction(const YamlEntry& entry) {
  const char* expected = "on_exceed must be drop, monitor or {ban: DURATION} (e.g. {ban: 10m})";
  if (entry.value.IsScalar()) {
    const std::string& text = entry.value.Scalar();
    if (text == "drop") {
      spec_.action = ExceedAction::kDrop;
    } else if (text == "monitor") {
      spec_.action = ExceedAction::kMonitor;
    } else if (text == "ban") {
      reader_.error(entry, "on_exceed: ban needs a duration, written {ban: 10m}");
    } else {
      reader_.error(entry, std::string(expected) + ", got '" + text + "'");
    }
    return;
  }
  if (!entry.value.IsMap()) {
    reader_.error(entry, std::string(expected) + ", got " + describeNode(entry.value));
    return;
  }
  std::optional<YamlFields> fields = reader_.mapping(entry, "on_exceed", {"ban"});
  if (!fields) return;
  const YamlEntry* ban = fields->find("ban");
  if (!ban) {
    reader_.error(entry, "on_exceed needs ban: DURATION (e.g. {ban: 10m})");
    return;
  }
  std::optional<uint64_t> ns = reader_.withUnit(*ban, "ban", parseDuration, "10m");
  if (!ns) return;
  if (*ns < kMinBanNs || *ns > kMaxBanNs) {
    reader_.error(*ban, "ban must last from 1s to 1d, got " + ban->value.Scalar());
    return;
  }
  spec_.action = ExceedAction::kBan;
  spec_.ban_ns = *ns;
}

}  // namespace

std::vector<RuleSpec> parseRules(YamlReader& reader, const YamlEntry& entry,
                                 const std::string& base_dir) {
  std::vector<RuleSpec> out;
  if (entry.value.IsNull()) return out;
  if (!reader.list(entry, "rules", "rules (each a mapping with name, match, key, limit, ...)")) {
    return out;
  }
  std::vector<NameSeen> names;
  size_t index = 0;
  for (const YAML::Node& value : entry.value) {
    YamlEntry item{entry.value, value};
    if (++index == FG_MAX_RULES + 1) {
      // and no more is read: each rule's match.src is bounded, so a few bytes an alias over
      // thousands of rules would otherwise stand for more prefixes than memory holds
      reader.error(item, "too many rules: " + std::to_string(entry.value.size()) +
                             " given, the XDP program holds at most " +
                             std::to_string(FG_MAX_RULES));
      break;
    }
    if (std::optional<RuleSpec> spec = RuleParser(reader, base_dir, names).parse(item)) {
      out.push_back(std::move(*spec));
    }
  }
  return out;
}

}  // namespace floodgate::config
