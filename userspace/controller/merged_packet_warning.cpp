// SPDX-License-Identifier: MIT
// mergedPacketWarning: what merges, device by device, and how to turn each off.
#include "controller/merged_packet_warning.h"

#include <vector>

#include "floodgate/common/text.h"

namespace floodgate {
namespace {

const char* const kConsequence =
    "a merged packet (up to 64 KB: dozens of full segments, hundreds of small ones) counts "
    "once against pps limits, and its segments' headers are not counted against bps";

// "'ethtool -K DEVICE a off b off'"
std::string turnOff(const std::string& device, const std::vector<std::string>& features) {
  std::string out = "'ethtool -K " + device;
  for (const std::string& feature : features) out += " " + feature + " off";
  return out + "'";
}

struct Finding {
  std::string what;
  std::string fix;
};

// What `device` merges as it receives. The kernel skips GRO on the device that runs a generic
// program (and turns LRO and hardware GRO off on it and below it, where the drivers let it);
// a device with devices below it merges nothing of its own.
void receiving(const MergingDevice& device, bool attached, std::vector<Finding>& out) {
  std::vector<std::string> on;
  if (device.features.gro && device.leaf && !attached) on.push_back("gro");
  if (device.features.lro) on.push_back("lro");
  if (device.features.gro_hw) on.push_back("rx-gro-hw");
  if (!on.empty()) {
    out.push_back({"'" + device.features.name + "' merges with its " + joined(on),
                   turnOff(device.features.name, on)});
  }
  if (device.lower_elsewhere) {
    out.push_back({"the device below '" + device.features.name +
                       "' (in another namespace) may merge with its GRO",
                   "'ethtool -K LOWER gro off' there"});
  }
}

// What a veth's peer in this namespace sends it merged; what writes to a tap.
void sending(const MergingDevice& device, bool attached, std::vector<Finding>& out) {
  const std::string& name = device.features.name;
  if (device.veth_peer) {
    const DeviceFeatures& peer = *device.veth_peer;
    std::vector<std::string> on;
    if (peer.tso) on.push_back("tso");
    if (peer.udp_segmentation) on.push_back("tx-udp-segmentation");
    if (peer.gso_list) on.push_back("tx-gso-list");
    if (peer.sctp_segmentation) on.push_back("tx-sctp-segmentation");
    if (on.empty()) return;
    out.push_back({"its veth peer '" + peer.name + "' sends them to '" + name + "' merged (" +
                       joined(on) + ")",
                   turnOff(peer.name, on) +
                       (attached ? " (or attach in native mode, which keeps them off)" : "")});
  } else if (device.kind == "tun" || device.features.driver == "tun") {
    out.push_back({"what writes to '" + name + "' may write them merged (a VM's TSO or UDP GSO)",
                   "turn TSO and UDP GSO off where it is written (a VM's virtio-net offloads)"});
  }
}

// The veths whose peers are in other namespaces, whose features cannot be read from here:
// one finding for all of them (a bridge of containers' veths has one a port).
void peersElsewhere(const ReceiveMerging& merging, std::vector<Finding>& out) {
  std::vector<std::string> names;
  for (const MergingDevice& device : merging.devices)
    if (device.peer_elsewhere) names.push_back("'" + device.features.name + "'");
  if (names.empty()) return;
  const bool attached = merging.devices.front().peer_elsewhere;
  const std::string whose = names.size() == 1
                                ? "the veth peer of " + names.front() + " (in another namespace)"
                                : "the veth peers of " + joined(names) + " (in other namespaces)";
  out.push_back({whose + " may send them merged",
                 "'ethtool -K PEER tso off tx-udp-segmentation off tx-gso-list off "
                 "tx-sctp-segmentation off' there" +
                     std::string(attached && names.size() == 1
                                     ? " (or attach in native mode, which keeps them off)"
                                     : "")});
}

}  // namespace

std::optional<std::string> mergedPacketWarning(const std::string& interface,
                                               const ReceiveMerging& merging) {
  std::vector<Finding> findings;
  for (size_t i = 0; i < merging.devices.size(); ++i) {
    receiving(merging.devices[i], i == 0, findings);
    sending(merging.devices[i], i == 0, findings);
  }
  if (!merging.devices.empty()) peersElsewhere(merging, findings);
  if (merging.unread > 0) {
    findings.push_back({std::to_string(merging.unread) + " more devices below it were not read",
                        "check 'ethtool -k' of those"});
  }
  if (findings.empty()) return std::nullopt;
  std::string what, fix;
  for (const Finding& finding : findings) {
    what += (what.empty() ? "" : "; ") + finding.what;
    fix += (fix.empty() ? "" : "; ") + finding.fix;
  }
  return "generic mode on '" + interface + "' meets a flow's segments merged: " + what + ": " +
         kConsequence + "; turn that off: " + fix;
}

std::optional<std::string> mergedPacketWarning(const std::string& interface) {
  auto merging = receiveMerging(interface);
  if (!merging) {
    return "generic mode on '" + interface + "' may meet a flow's segments merged (" +
           merging.error().message + "): " + kConsequence + "; check 'ethtool -k' of it, " +
           "of the devices below it and of a veth's peer, and turn merging off";
  }
  return mergedPacketWarning(interface, *merging);
}

}  // namespace floodgate
