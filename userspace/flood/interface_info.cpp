// SPDX-License-Identifier: MIT
// Interface facts from SIOCETHTOOL and SIOCGIFHWADDR on a datagram socket.
#include "flood/interface_info.h"

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "kernel/unique_fd.h"

namespace floodgate::flood {
namespace {

// Runs the interface ioctl `code` with `request` (its name filled in here) on `interface`.
Status interfaceIoctl(const std::string& interface, unsigned long code, ifreq& request,
                      const char* what) {
  if (interface.size() >= IFNAMSIZ) {
    return Error::usage("'" + interface + "' is longer than an interface name can be");
  }
  UniqueFd socket_fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!socket_fd.valid()) return Error::failure(std::string("socket: ") + std::strerror(errno));
  std::strncpy(request.ifr_name, interface.c_str(), IFNAMSIZ - 1);
  if (ioctl(socket_fd.get(), code, &request) != 0) {
    if (errno == ENODEV) {
      return Error::usage("no network interface named '" + interface +
                          "' in this network namespace (see 'ip link')");
    }
    return Error::failure("cannot read the " + std::string(what) + " of '" + interface +
                          "': " + std::strerror(errno));
  }
  return okStatus();
}

// Runs one SIOCETHTOOL request on `interface`.
Status ethtool(const std::string& interface, void* request, const char* what) {
  ifreq request_header{};
  request_header.ifr_data = static_cast<char*>(request);
  return interfaceIoctl(interface, SIOCETHTOOL, request_header, what);
}

}  // namespace

Result<std::string> interfaceDriver(const std::string& interface) {
  ethtool_drvinfo info{};
  info.cmd = ETHTOOL_GDRVINFO;
  if (Status s = ethtool(interface, &info, "driver"); !s) {
    if (errno == EOPNOTSUPP) return std::string();  // lo and some virtual devices have none
    return s.error();
  }
  return std::string(info.driver);
}

Result<MacAddress> interfaceMac(const std::string& interface) {
  ifreq request{};
  if (Status s = interfaceIoctl(interface, SIOCGIFHWADDR, request, "MAC address"); !s) {
    return s.error();
  }
  MacAddress mac{};
  std::memcpy(mac.data(), request.ifr_hwaddr.sa_data, mac.size());
  return mac;
}

Result<VethXdpCounters> vethXdpCounters(const std::string& interface) {
  // how many statistics there are
  alignas(ethtool_sset_info) uint8_t sset_buffer[sizeof(ethtool_sset_info) + sizeof(uint32_t)]{};
  auto* sset = reinterpret_cast<ethtool_sset_info*>(sset_buffer);
  sset->cmd = ETHTOOL_GSSET_INFO;
  sset->sset_mask = 1ULL << ETH_SS_STATS;
  if (Status s = ethtool(interface, sset, "statistics"); !s) return s.error();
  const uint32_t count = sset->sset_mask ? sset->data[0] : 0;

  // their names, then their values, in the same order
  std::vector<uint8_t> names_buffer(sizeof(ethtool_gstrings) + size_t{count} * ETH_GSTRING_LEN);
  auto* names = reinterpret_cast<ethtool_gstrings*>(names_buffer.data());
  names->cmd = ETHTOOL_GSTRINGS;
  names->string_set = ETH_SS_STATS;
  names->len = count;
  if (Status s = ethtool(interface, names, "statistic names"); !s) return s.error();
  std::vector<uint8_t> values_buffer(sizeof(ethtool_stats) + size_t{count} * sizeof(uint64_t));
  auto* values = reinterpret_cast<ethtool_stats*>(values_buffer.data());
  values->cmd = ETHTOOL_GSTATS;
  values->n_stats = count;
  if (Status s = ethtool(interface, values, "statistics"); !s) return s.error();

  // veth names them tx_queue_<peer rx queue>_xdp_xmit and ..._xdp_xmit_errors
  VethXdpCounters out;
  for (uint32_t i = 0; i < count; ++i) {
    std::string name(
        reinterpret_cast<const char*>(names->data + size_t{i} * ETH_GSTRING_LEN),
        strnlen(reinterpret_cast<const char*>(names->data) + size_t{i} * ETH_GSTRING_LEN,
                ETH_GSTRING_LEN));
    if (name.rfind("tx_queue_", 0) != 0) continue;
    auto ends_with = [&](const std::string& suffix) {
      return name.size() > suffix.size() &&
             name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    if (ends_with("_xdp_xmit")) out.xmit += values->data[i];
    if (ends_with("_xdp_xmit_errors")) out.errors += values->data[i];
  }
  return out;
}

}  // namespace floodgate::flood
