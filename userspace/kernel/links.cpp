// SPDX-License-Identifier: MIT
// listLinks: one RTM_GETLINK dump over a NETLINK_ROUTE socket.
#include "kernel/links.h"

#include <arpa/inet.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "kernel/unique_fd.h"

namespace floodgate {
namespace {

Error netlinkError(const char* what, int err) {
  return Error::failure(std::string("cannot list the network links (") + what +
                        "): " + std::strerror(err));
}

// IFLA_VLAN_PROTOCOL (network order in the attribute) of a vlan's IFLA_INFO_DATA; 0 when absent.
uint16_t vlanProtocol(const rtattr* kind_data) {
  int nested = static_cast<int>(RTA_PAYLOAD(kind_data));
  for (const rtattr* attr = static_cast<const rtattr*>(RTA_DATA(kind_data)); RTA_OK(attr, nested);
       attr = RTA_NEXT(attr, nested)) {
    if (attr->rta_type != IFLA_VLAN_PROTOCOL || RTA_PAYLOAD(attr) < sizeof(uint16_t)) continue;
    uint16_t protocol;
    std::memcpy(&protocol, RTA_DATA(attr), sizeof(protocol));
    return ntohs(protocol);
  }
  return 0;
}

// The link described by one RTM_NEWLINK message.
LinkEntry parseLink(const nlmsghdr* message) {
  LinkEntry entry;
  const auto* info = static_cast<const ifinfomsg*>(NLMSG_DATA(message));
  entry.index = info->ifi_index;
  int length = static_cast<int>(IFLA_PAYLOAD(message));
  for (const rtattr* attr = IFLA_RTA(info); RTA_OK(attr, length); attr = RTA_NEXT(attr, length)) {
    const void* data = RTA_DATA(attr);
    const size_t size = RTA_PAYLOAD(attr);
    switch (attr->rta_type) {
      case IFLA_IFNAME:
        entry.name.assign(static_cast<const char*>(data),
                          strnlen(static_cast<const char*>(data), size));
        break;
      case IFLA_LINK:
        if (size >= sizeof(int)) std::memcpy(&entry.link, data, sizeof(int));
        break;
      case IFLA_LINK_NETNSID:
        entry.link_elsewhere = true;
        break;
      case IFLA_MASTER:
        if (size >= sizeof(int)) std::memcpy(&entry.master, data, sizeof(int));
        break;
      case IFLA_LINKINFO: {
        int nested = static_cast<int>(size);
        const rtattr* kind_data = nullptr;
        for (const rtattr* inner = static_cast<const rtattr*>(data); RTA_OK(inner, nested);
             inner = RTA_NEXT(inner, nested)) {
          if (inner->rta_type == IFLA_INFO_DATA) kind_data = inner;
          if (inner->rta_type != IFLA_INFO_KIND) continue;
          const char* kind = static_cast<const char*>(RTA_DATA(inner));
          entry.kind.assign(kind, strnlen(kind, RTA_PAYLOAD(inner)));
        }
        // IFLA_INFO_DATA's attributes are numbered per kind: read as a vlan's only for one
        if (kind_data && entry.kind == "vlan") entry.vlan_protocol = vlanProtocol(kind_data);
        break;
      }
      default:
        break;
    }
  }
  return entry;
}

}  // namespace

Result<std::vector<LinkEntry>> listLinks() {
  UniqueFd fd(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (!fd.valid()) return netlinkError("socket", errno);
  struct {
    nlmsghdr header;
    ifinfomsg info;
  } request{};
  request.header.nlmsg_len = sizeof(request);
  request.header.nlmsg_type = RTM_GETLINK;
  request.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  request.header.nlmsg_seq = 1;
  request.info.ifi_family = AF_UNSPEC;
  if (send(fd.get(), &request, sizeof(request), 0) != static_cast<ssize_t>(sizeof(request))) {
    return netlinkError("send", errno);
  }
  std::vector<LinkEntry> links;
  // 64 KiB of messages at a time: the kernel's dump batches, and one link's message (its
  // stats, VF details), fit in it
  std::vector<nlmsghdr> storage(65536 / sizeof(nlmsghdr));
  char* buffer = reinterpret_cast<char*>(storage.data());
  const size_t capacity = storage.size() * sizeof(nlmsghdr);
  for (;;) {
    // MSG_TRUNC: the length of the datagram whole, so a cut one is told, not half read
    const ssize_t got = recv(fd.get(), buffer, capacity, MSG_TRUNC);
    if (got < 0) {
      if (errno == EINTR) continue;
      return netlinkError("receive", errno);
    }
    if (got == 0) return netlinkError("receive", ECONNRESET);
    if (static_cast<size_t>(got) > capacity) return netlinkError("receive", EMSGSIZE);
    int length = static_cast<int>(got);
    for (auto* message = reinterpret_cast<nlmsghdr*>(buffer); NLMSG_OK(message, length);
         message = NLMSG_NEXT(message, length)) {
      // a dump the kernel saw change while it ran may have missed or repeated a link
      if (message->nlmsg_flags & NLM_F_DUMP_INTR) return netlinkError("dump", EAGAIN);
      if (message->nlmsg_type == NLMSG_DONE) {
        int error = 0;
        if (message->nlmsg_len >= NLMSG_LENGTH(sizeof(int)))
          std::memcpy(&error, NLMSG_DATA(message), sizeof(int));
        if (error != 0) return netlinkError("dump", -error);
        return links;
      }
      if (message->nlmsg_type == NLMSG_ERROR) {
        const auto* err = static_cast<const nlmsgerr*>(NLMSG_DATA(message));
        return netlinkError("dump", err->error ? -err->error : EPROTO);
      }
      if (message->nlmsg_type == RTM_NEWLINK) links.push_back(parseLink(message));
    }
  }
}

}  // namespace floodgate
