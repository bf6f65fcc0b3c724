// SPDX-License-Identifier: MIT
// Reads a device's merging features through the ethtool ioctl (the names of the feature
// bits, the ETH_SS_FEATURES string set, then which of them are active), and walks the links
// below an interface by the rtnetlink dump.
#include "kernel/receive_merging.h"

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "kernel/links.h"
#include "kernel/unique_fd.h"

namespace floodgate {
namespace {

class EthtoolSocket {
 public:
  explicit EthtoolSocket(const std::string& interface)
      : fd_(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)),
        open_errno_(fd_.valid() ? 0 : errno),
        interface_(interface) {}

  // One SIOCETHTOOL call with `data` as its argument; errno is kept on failure.
  bool call(void* data) const {
    if (!fd_.valid()) {
      errno = open_errno_;
      return false;
    }
    if (interface_.empty() || interface_.size() >= IFNAMSIZ) {
      errno = EINVAL;
      return false;
    }
    ifreq request{};
    std::memcpy(request.ifr_name, interface_.data(), interface_.size());
    request.ifr_data = static_cast<char*>(data);
    return ioctl(fd_.get(), SIOCETHTOOL, &request) == 0;
  }

 private:
  UniqueFd fd_;
  int open_errno_;
  std::string interface_;
};

// A buffer for an ethtool struct with a flexible array of `extra` bytes after it, as u64s so
// the struct's alignment holds.
template <typename T>
std::vector<uint64_t> ethtoolBuffer(size_t extra) {
  return std::vector<uint64_t>((sizeof(T) + extra + 7) / 8, 0);
}

Error readError(const std::string& interface, const char* what) {
  return Error::failure("cannot read the " + std::string(what) + " of '" + interface +
                        "': " + std::strerror(errno));
}

}  // namespace

Result<DeviceFeatures> deviceFeatures(const std::string& interface) {
  EthtoolSocket ethtool(interface);

  auto info_buffer = ethtoolBuffer<ethtool_sset_info>(sizeof(uint32_t));
  auto* info = reinterpret_cast<ethtool_sset_info*>(info_buffer.data());
  info->cmd = ETHTOOL_GSSET_INFO;
  info->sset_mask = 1ULL << ETH_SS_FEATURES;
  if (!ethtool.call(info)) return readError(interface, "feature names");
  if (!(info->sset_mask & (1ULL << ETH_SS_FEATURES))) {
    errno = EOPNOTSUPP;
    return readError(interface, "feature names");
  }
  const uint32_t count = info->data[0];

  // the kernel writes as many names as it counted above (the feature names are fixed at
  // build time), so the buffer holds them all
  auto names_buffer = ethtoolBuffer<ethtool_gstrings>(size_t{count} * ETH_GSTRING_LEN);
  auto* names = reinterpret_cast<ethtool_gstrings*>(names_buffer.data());
  names->cmd = ETHTOOL_GSTRINGS;
  names->string_set = ETH_SS_FEATURES;
  names->len = count;
  if (!ethtool.call(names)) return readError(interface, "feature names");

  const uint32_t blocks = (count + 31) / 32;
  auto features_buffer =
      ethtoolBuffer<ethtool_gfeatures>(size_t{blocks} * sizeof(ethtool_get_features_block));
  auto* features = reinterpret_cast<ethtool_gfeatures*>(features_buffer.data());
  features->cmd = ETHTOOL_GFEATURES;
  features->size = blocks;
  if (!ethtool.call(features)) return readError(interface, "features");

  DeviceFeatures out;
  out.name = interface;
  // a name filled to ETH_GSTRING_LEN has no terminator: strnlen bounds it
  const uint32_t named = std::min(names->len, count);
  for (uint32_t bit = 0; bit < named; ++bit) {
    const char* name = reinterpret_cast<const char*>(names->data) + size_t{bit} * ETH_GSTRING_LEN;
    const std::string feature(name, strnlen(name, ETH_GSTRING_LEN));
    const bool active = features->features[bit / 32].active & (1U << (bit % 32));
    if (feature == "rx-gro") out.gro = active;
    if (feature == "rx-lro") out.lro = active;
    if (feature == "rx-gro-hw") out.gro_hw = active;
    if (feature == "tx-tcp-segmentation" || feature == "tx-tcp6-segmentation") {
      out.tso = out.tso || active;
    }
    if (feature == "tx-udp-segmentation") out.udp_segmentation = active;
    if (feature == "tx-gso-list") out.gso_list = active;
    if (feature == "tx-sctp-segmentation") out.sctp_segmentation = active;
    if (feature == "rx-vlan-hw-parse") out.vlan_tags_taken_off = active;
    if (feature == "tx-vlan-hw-insert") out.vlan_tags_inserted = active;
  }

  ethtool_drvinfo driver{};
  driver.cmd = ETHTOOL_GDRVINFO;
  if (ethtool.call(&driver))
    out.driver.assign(driver.driver, strnlen(driver.driver, sizeof(driver.driver)));
  return out;
}

Result<ReceiveMerging> receiveMerging(const std::string& interface) {
  auto links = listLinks();
  if (!links) return links.error();
  auto byIndex = [&](int index) -> const LinkEntry* {
    for (const LinkEntry& link : *links)
      if (link.index == index) return &link;
    return nullptr;
  };
  const LinkEntry* self = nullptr;
  for (const LinkEntry& link : *links)
    if (link.name == interface) self = &link;
  if (!self) {
    errno = ENODEV;
    return readError(interface, "links");
  }

  // the interface, then the devices below it breadth first, each once
  ReceiveMerging out;
  std::vector<int> seen = {self->index};
  auto below = [&](int index) {
    if (std::find(seen.begin(), seen.end(), index) == seen.end()) seen.push_back(index);
  };
  for (size_t next = 0; next < seen.size(); ++next) {
    if (next >= kMaxMergingDevices) {
      out.unread = seen.size() - next;
      break;
    }
    const LinkEntry* link = byIndex(seen[next]);
    if (!link) continue;
    auto features = deviceFeatures(link->name);
    if (!features) {
      if (errno == ENODEV) continue;  // gone since the dump: it hands over nothing now
      return features.error();
    }
    MergingDevice device;
    device.features = *features;
    device.kind = link->kind;
    // a veth's or netkit's link is its peer, which sends to it rather than handing it what
    // it received; another kind's is the device below it
    const bool pair = link->kind == "veth" || link->kind == "netkit";
    if (pair) {
      const LinkEntry* peer = link->link_elsewhere ? nullptr : byIndex(link->link);
      device.peer_elsewhere = !peer;
      if (peer) {
        auto peer_features = deviceFeatures(peer->name);
        if (!peer_features) return peer_features.error();
        device.veth_peer = *peer_features;
      }
    } else if (link->link && link->link != link->index) {
      device.leaf = false;
      if (link->link_elsewhere) {
        device.lower_elsewhere = true;
      } else {
        below(link->link);
      }
    }
    for (const LinkEntry& port : *links) {
      if (port.master == link->index) {
        device.leaf = false;
        below(port.index);
      }
    }
    out.devices.push_back(std::move(device));
  }
  return out;
}

}  // namespace floodgate
