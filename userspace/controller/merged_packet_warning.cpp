// SPDX-License-Identifier: MIT
// mergedPacketWarning: the features that merge, and how to turn them off.
#include "controller/merged_packet_warning.h"

#include <vector>

namespace floodgate {
namespace {

const char* const kConsequence =
    "a merged packet (up to 64 KB, dozens of segments) counts once against pps limits";

}  // namespace

std::optional<std::string> mergedPacketWarning(const std::string& interface,
                                               const ReceiveMerging& merging) {
  // ethtool -K's names for the features, in the order ethtool -k lists them
  std::vector<std::string> on;
  if (merging.gro) on.push_back("gro");
  if (merging.lro) on.push_back("lro");
  if (merging.gro_hw) on.push_back("rx-gro-hw");
  if (on.empty() && !merging.veth) return std::nullopt;

  std::string what, fix;
  if (!on.empty()) {
    std::string names, off;
    for (size_t i = 0; i < on.size(); ++i) {
      names += (i == 0 ? "" : i + 1 == on.size() ? " and " : ", ") + on[i];
      off += " " + on[i] + " off";
    }
    what = "after its " + names + " merged a flow's segments";
    fix = "'ethtool -K " + interface + off + "'";
  }
  if (merging.veth) {
    // the peer may be in another namespace, whose features cannot be read from here; native
    // mode is exact on a veth: the kernel turns the peer's segmentation off for the program
    what += std::string(what.empty() ? "" : ", and ") +
            "as its veth peer sends them (merged by TSO or UDP GSO)";
    fix += std::string(fix.empty() ? "" : ", and ") +
           "attach in native mode, or 'ethtool -K PEER tso off tx-udp-segmentation off' on the "
           "peer";
  }
  return "generic mode on '" + interface + "' meets packets " + what + ": " + kConsequence + "; " +
         fix;
}

std::optional<std::string> mergedPacketWarning(const std::string& interface) {
  auto merging = receiveMerging(interface);
  if (!merging) {
    return "generic mode on '" + interface + "' may meet packets merged by GRO or LRO (" +
           merging.error().message + "): " + kConsequence + "; check with 'ethtool -k " +
           interface + "' and turn them off";
  }
  return mergedPacketWarning(interface, *merging);
}

}  // namespace floodgate
