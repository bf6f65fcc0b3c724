// SPDX-License-Identifier: MIT
// A rule's `match:`: protocol, destination ports and ranges, TCP flags, source CIDRs.
#include <charconv>

#include "config/rule_parts.h"
#include "config/sections.h"
#include "floodgate_shared.h"

namespace floodgate::config {
namespace {

// TCP flag names in the order of their bits in the header's flags byte (FIN = 0x01).
constexpr std::string_view kTcpFlags[] = {"fin", "syn", "rst", "psh", "ack", "urg", "ece", "cwr"};

std::string_view trim(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return text;
}

// The number `text` holds when it is all digits (a long one reads as 999999, which the
// caller reports as out of range); nullopt when it is not a number at all.
std::optional<int64_t> portNumber(std::string_view text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string_view::npos) {
    return std::nullopt;
  }
  if (text.size() > 6) return 999999;
  int64_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

std::optional<PortRange> parsePorts(YamlReader& reader, const YamlEntry& item) {
  const std::string example = " (expected a port such as 53 or a range such as \"8000-8100\")";
  if (!item.value.IsScalar()) {
    reader.error(item, "dst_ports entries must be ports or ranges" + example.substr(1) + " (got " +
                           describeNode(item.value) + ")");
    return std::nullopt;
  }
  const std::string& text = item.value.Scalar();
  size_t dash = text.find('-');
  std::string_view first_text = trim(std::string_view(text).substr(0, dash));
  std::string_view last_text =
      dash == std::string::npos ? first_text : trim(std::string_view(text).substr(dash + 1));
  std::optional<int64_t> first = portNumber(first_text);
  std::optional<int64_t> last = portNumber(last_text);
  if (!first || !last) {
    reader.error(item, "'" + text + "' is not a port or port range" + example);
    return std::nullopt;
  }
  for (int64_t port : {*first, *last}) {
    if (port < 1 || port > 65535) {
      const std::string in = dash == std::string::npos ? "" : " in '" + text + "'";
      reader.error(item,
                   "port " + std::to_string(port) + in + " is out of range (expected 1 to 65535)");
      return std::nullopt;
    }
  }
  if (*first > *last) {
    reader.error(
        item, "port range '" + text + "' is backwards (the first port must not exceed the last)");
    return std::nullopt;
  }
  return PortRange{static_cast<uint16_t>(*first), static_cast<uint16_t>(*last)};
}

void parseDstPorts(YamlReader& reader, const YamlEntry& entry, RuleSpec& spec) {
  if (!reader.list(entry, "dst_ports", "ports and ranges (e.g. [53, \"8000-8100\"])")) return;
  if (entry.value.size() == 0) {
    reader.error(entry, "dst_ports is empty; leave it out to match every port");
    return;
  }
  size_t index = 0;
  for (const YAML::Node& value : entry.value) {
    YamlEntry item{entry.value, value};
    if (++index == FG_MAX_PORT_RANGES + 1) {
      reader.error(item, "too many dst_ports: " + std::to_string(entry.value.size()) +
                             " given, a rule holds at most " + std::to_string(FG_MAX_PORT_RANGES) +
                             " ports and ranges");
    }
    if (std::optional<PortRange> range = parsePorts(reader, item)) spec.dst_ports.push_back(*range);
  }
}

void parseTcpFlags(YamlReader& reader, const YamlEntry& entry, RuleSpec& spec) {
  std::optional<YamlFields> fields =
      reader.mapping(entry, "tcp_flags", {"fin", "syn", "rst", "psh", "ack", "urg", "ece", "cwr"});
  if (!fields) return;
  for (size_t bit = 0; bit < std::size(kTcpFlags); ++bit) {
    const YamlEntry* flag = fields->find(kTcpFlags[bit]);
    if (!flag) continue;
    auto state = reader.choice(*flag, std::string(kTcpFlags[bit]), {"set", "clear"});
    if (!state) continue;
    (*state == 0 ? spec.tcp_flags_set : spec.tcp_flags_clear) |= static_cast<uint8_t>(1u << bit);
  }
}

}  // namespace

void parseMatch(YamlReader& reader, const YamlEntry& entry, const std::string& base_dir,
                RuleSpec& spec) {
  std::optional<YamlFields> fields =
      reader.mapping(entry, "match", {"protocol", "dst_ports", "tcp_flags", "src"});
  if (!fields) return;
  // When the protocol itself is wrong, what depends on it is not judged (one error, not three).
  bool protocol_known = true;
  if (const YamlEntry* protocol = fields->find("protocol")) {
    static constexpr Protocol kProtocols[] = {Protocol::kTcp, Protocol::kUdp, Protocol::kIcmp,
                                              Protocol::kAny};
    if (auto index = reader.choice(*protocol, "protocol", {"tcp", "udp", "icmp", "any"})) {
      spec.protocol = kProtocols[*index];
    } else {
      protocol_known = false;
    }
  }
  if (const YamlEntry* ports = fields->find("dst_ports")) {
    if (spec.protocol == Protocol::kIcmp && protocol_known) {
      reader.error(ports->key, "dst_ports needs protocol tcp, udp or any (icmp has no ports)");
    } else {
      parseDstPorts(reader, *ports, spec);
    }
  }
  if (const YamlEntry* flags = fields->find("tcp_flags")) {
    if (spec.protocol != Protocol::kTcp && protocol_known) {
      reader.error(flags->key, "tcp_flags needs protocol: tcp");
    } else {
      parseTcpFlags(reader, *flags, spec);
    }
  }
  if (const YamlEntry* src = fields->find("src")) {
    size_t errors_before = reader.errorCount();
    // every rule's set shares one pair of tries: the config's check counts distinct prefixes
    static const CidrListBound kBound{FG_LIST_MAX_ENTRIES, "the rules' match.src sets can hold",
                                      "merge them into shorter prefixes"};
    spec.sources = parseCidrList(reader, *src, "src", base_dir, kBound);
    if (spec.sources.empty() && reader.errorCount() == errors_before) {
      reader.error(*src, "src holds no CIDR; leave it out to match every source");
    }
  }
}

}  // namespace floodgate::config
