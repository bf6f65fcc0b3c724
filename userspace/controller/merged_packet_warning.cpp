// SPDX-License-Identifier: MIT
// mergedPacketWarning: what merges, device by device, and how to turn each off.
#include "controller/merged_packet_warning.h"

#include <vector>

namespace floodgate {
namespace {

const char* const kConsequence =
    "a merged packet (up to 64 KB: dozens of full segments, hundreds of small ones) counts "
    "once against pps limits, and its segments' headers are not counted against bps";

// "a, b and c"
std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return out;
}

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

// What `device` merges as it receives; the kernel skips GRO on the device that runs a
// generic program (and turns its LRO and hardware GRO off, where the driver lets it).
void receiving(const DeviceFeatures& device, bool attached, std::vector<Finding>& out) {
  std::vector<std::string> on;
  if (device.gro && !attached) on.push_back("gro");
  if (device.lro) on.push_back("lro");
  if (device.gro_hw) on.push_back("rx-gro-hw");
  if (on.empty()) return;
  out.push_back({"'" + device.name + "' merges with its " + joined(on), turnOff(device.name, on)});
}

// What a veth's peer sends it merged; what writes to a tap.
void sending(const MergingDevice& device, bool attached, std::vector<Finding>& out) {
  const std::string& name = device.features.name;
  const std::string native = attached ? " (or attach in native mode, which keeps them off)" : "";
  if (device.features.driver == "veth" && device.veth_peer) {
    const DeviceFeatures& peer = *device.veth_peer;
    std::vector<std::string> on;
    if (peer.tso) on.push_back("tso");
    if (peer.udp_segmentation) on.push_back("tx-udp-segmentation");
    if (peer.gso_list) on.push_back("tx-gso-list");
    if (peer.sctp_segmentation) on.push_back("tx-sctp-segmentation");
    if (on.empty()) return;
    out.push_back({"its veth peer '" + peer.name + "' sends them to '" + name + "' merged (" +
                       joined(on) + ")",
                   turnOff(peer.name, on) + native});
  } else if (device.features.driver == "veth") {
    // the peer is in another namespace, whose features cannot be read from here
    out.push_back({"the veth peer of '" + name + "' (in another namespace) may send them merged",
                   "'ethtool -K PEER tso off tx-udp-segmentation off tx-gso-list off "
                   "tx-sctp-segmentation off' there" +
                       native});
  } else if (device.features.driver == "tun") {
    out.push_back({"what writes to '" + name + "' may write them merged (a VM's TSO or UDP GSO)",
                   "turn TSO and UDP GSO off where it is written (a VM's virtio-net offloads)"});
  }
}

}  // namespace

std::optional<std::string> mergedPacketWarning(const std::string& interface,
                                               const ReceiveMerging& merging) {
  std::vector<Finding> findings;
  for (size_t i = 0; i < merging.devices.size(); ++i) {
    receiving(merging.devices[i].features, i == 0, findings);
    sending(merging.devices[i], i == 0, findings);
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
