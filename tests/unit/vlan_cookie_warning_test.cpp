// SPDX-License-Identifier: MIT
// Unit tests of controller/vlan_cookie_warning: cookie rules on an interface whose XDP program
// meets its VLAN clients' frames untagged.
#include "controller/vlan_cookie_warning.h"

#include <gtest/gtest.h>

namespace floodgate {
namespace {

AttachOptions withRules(SynCookies first, SynCookies second = SynCookies::kOff) {
  AttachOptions options;
  options.interface = "eth0";
  RuleSpec syn;
  syn.name = "syn";
  syn.syn_cookies = first;
  RuleSpec other = syn;
  other.name = "syn6";
  other.syn_cookies = second;
  options.rules = {syn, other};
  return options;
}

VlanReceive offloaded(std::vector<std::string> devices) {
  VlanReceive vlan;
  vlan.tags_taken_off = true;
  vlan.vlan_devices = std::move(devices);
  return vlan;
}

TEST(VlanCookieWarning, ANicThatTakesTagsOffIsNamedWithItsVlansAndTheCommand) {
  EXPECT_EQ(vlanCookieWarning(withRules(SynCookies::kAuto), offloaded({"eth0.100"})),
            "eth0 meets VLAN frames untagged at XDP (the tag offloaded), and eth0.100 "
            "receives through it: the SYN-ACKs of rule 'syn' go back untagged, so clients on "
            "that VLAN never complete a handshake while cookies are sent; turn the offload "
            "off, so the tag stays in the frame: 'ethtool -K eth0 rxvlan off'");
  auto both = vlanCookieWarning(withRules(SynCookies::kAlways, SynCookies::kAuto),
                                offloaded({"eth0.100", "eth0.200", "voice"}));
  ASSERT_TRUE(both);
  EXPECT_NE(both->find("eth0.100, eth0.200 and voice receive through it: the SYN-ACKs of rules "
                       "'syn' and 'syn6' go back untagged, so clients on those VLANs"),
            std::string::npos)
      << *both;
}

TEST(VlanCookieWarning, AVethsFixIsOnItsPeer) {
  VlanReceive vlan = offloaded({"v7"});
  vlan.veth = true;
  vlan.peer = "veth1";
  auto line = vlanCookieWarning(withRules(SynCookies::kAlways), vlan);
  ASSERT_TRUE(line);
  EXPECT_NE(line->find("turn its peer's tag insertion off, so the tag stays in the frame: "
                       "'ethtool -K veth1 txvlan off'"),
            std::string::npos)
      << *line;
  vlan.peer.clear();
  line = vlanCookieWarning(withRules(SynCookies::kAlways), vlan);
  ASSERT_TRUE(line);
  EXPECT_EQ(line->rfind("eth0 may meet VLAN frames untagged at XDP (the tag offloaded by its "
                        "peer, in another namespace)",
                        0),
            0u)
      << *line;
  EXPECT_NE(line->find("'ethtool -K PEER txvlan off' on the veth's peer (in another namespace)"),
            std::string::npos)
      << *line;
}

TEST(VlanCookieWarning, NothingIsSaidWhereTheSynAcksKeepTheirTagOrNoCookieGoesOut) {
  EXPECT_FALSE(vlanCookieWarning(withRules(SynCookies::kOff), offloaded({"eth0.100"})))
      << "no cookie rule";
  VlanReceive kept = offloaded({"eth0.100"});
  kept.tags_taken_off = false;
  EXPECT_FALSE(vlanCookieWarning(withRules(SynCookies::kAlways), kept)) << "the tag stays";
  EXPECT_FALSE(vlanCookieWarning(withRules(SynCookies::kAlways), offloaded({})))
      << "no VLAN device";
  AttachOptions monitor = withRules(SynCookies::kAlways);
  monitor.monitor = true;
  EXPECT_FALSE(vlanCookieWarning(monitor, offloaded({"eth0.100"}))) << "monitor sends none";
}

}  // namespace
}  // namespace floodgate
