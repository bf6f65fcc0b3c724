// SPDX-License-Identifier: MIT
// vlanCookieWarning: the cookie rules, the device's VLAN offload and its VLAN devices.
#include "controller/vlan_cookie_warning.h"

#include "floodgate/common/text.h"
#include "kernel/links.h"
#include "kernel/receive_merging.h"

namespace floodgate {
namespace {

// The names of the rules that answer SYNs with cookies; none in monitor mode, which sends
// no cookies.
std::vector<std::string> cookieRules(const AttachOptions& options) {
  std::vector<std::string> names;
  if (options.monitor) return names;
  for (const RuleSpec& rule : options.rules) {
    if (rule.syn_cookies != SynCookies::kOff) names.push_back("'" + rule.name + "'");
  }
  return names;
}

}  // namespace

std::optional<std::string> vlanCookieWarning(const AttachOptions& options,
                                             const VlanReceive& vlan) {
  const std::vector<std::string> rules = cookieRules(options);
  if (rules.empty() || !vlan.tags_taken_off || vlan.vlan_devices.empty()) return std::nullopt;
  const std::string& device = options.interface;
  const std::string fix =
      vlan.veth ? "turn its peer's tag insertion off, so the tag stays in the frame: 'ethtool -K " +
                      (vlan.peer.empty() ? "PEER" : vlan.peer) + " txvlan off'" +
                      (vlan.peer.empty() ? " on the veth's peer (in another namespace)" : "")
                : "turn the offload off, so the tag stays in the frame: 'ethtool -K " + device +
                      " rxvlan off'";
  const bool one = vlan.vlan_devices.size() == 1;
  const bool unread = vlan.veth && vlan.peer.empty();
  return device + (unread ? " may meet" : " meets") +
         " VLAN frames untagged at XDP (the tag offloaded" +
         (unread ? " by its peer, in another namespace" : "") + "), and " +
         joined(vlan.vlan_devices) + (one ? " receives" : " receive") +
         " through it: the SYN-ACKs of " + (rules.size() == 1 ? "rule " : "rules ") +
         joined(rules) + " go back untagged, so clients on " + (one ? "that VLAN" : "those VLANs") +
         " never complete a handshake while cookies are sent; " + fix;
}

std::optional<std::string> vlanCookieWarning(const AttachOptions& options) {
  if (cookieRules(options).empty()) return std::nullopt;
  auto links = listLinks();
  if (!links) {
    return "cannot tell whether " + options.interface +
           " has VLAN devices a cookie rule's SYN-ACKs must reach (" + links.error().message +
           "): check 'ip -d link' for vlan links on it, and 'ethtool -k " + options.interface +
           "' for rx-vlan-offload";
  }
  const LinkEntry* self = nullptr;
  for (const LinkEntry& link : *links)
    if (link.name == options.interface) self = &link;
  if (!self) return std::nullopt;
  VlanReceive vlan;
  for (const LinkEntry& link : *links) {
    if (link.kind == "vlan" && link.vlan_protocol == 0x8100 && link.link == self->index &&
        !link.link_elsewhere)
      vlan.vlan_devices.push_back(link.name);
  }
  if (vlan.vlan_devices.empty()) return std::nullopt;
  vlan.veth = self->kind == "veth";
  // a veth meets its peer's frames as sent: tagged in the metadata when the peer inserts
  // tags by offload, whatever its own receive offload says
  std::string device = options.interface;
  if (vlan.veth) {
    device.clear();
    for (const LinkEntry& link : *links)
      if (!self->link_elsewhere && link.index == self->link) device = link.name;
    vlan.peer = device;
    if (device.empty()) {
      vlan.tags_taken_off = true;
      return vlanCookieWarning(options, vlan);
    }
  }
  auto features = deviceFeatures(device);
  if (!features) {
    return "cannot tell whether " + options.interface +
           " meets VLAN frames untagged, which would send a cookie rule's SYN-ACKs to " +
           joined(vlan.vlan_devices) + " untagged (" + features.error().message +
           "): check 'ethtool -k " + device + "' for " +
           (vlan.veth ? "tx-vlan-offload" : "rx-vlan-offload");
  }
  vlan.tags_taken_off = vlan.veth ? features->vlan_tags_inserted : features->vlan_tags_taken_off;
  return vlanCookieWarning(options, vlan);
}

}  // namespace floodgate
