// SPDX-License-Identifier: MIT
// sendSegmentedUdp: a UDP socket with UDP_SEGMENT on a thread that has entered the namespace.
#include "e2e/segmented_udp.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "kernel/unique_fd.h"
#include "udp_traffic/udp_traffic.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

namespace floodgate::test {

Result<uint64_t> sendSegmentedUdp(const std::string& netns, const std::string& destination,
                                  uint16_t port, uint32_t sends, uint32_t datagrams,
                                  uint16_t payload) {
  Result<uint64_t> result = Error::failure("not run");
  // a thread of its own: setns moves only the calling thread
  std::thread sender([&] {
    if (Status s = enterNetns(netns); !s) {
      result = s.error();
      return;
    }
    UniqueFd fd(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    int segment = payload;
    if (!fd.valid() || setsockopt(fd.get(), SOL_UDP, UDP_SEGMENT, &segment, sizeof(segment)) != 0) {
      result = Error::failure(std::string("UDP socket with UDP_SEGMENT: ") + std::strerror(errno));
      return;
    }
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    if (inet_pton(AF_INET, destination.c_str(), &to.sin_addr) != 1) {
      result = Error::failure("not an IPv4 address: " + destination);
      return;
    }
    const std::vector<char> buffer(size_t{datagrams} * payload, 'x');
    for (uint32_t i = 0; i < sends; ++i) {
      if (sendto(fd.get(), buffer.data(), buffer.size(), 0, reinterpret_cast<sockaddr*>(&to),
                 sizeof(to)) != static_cast<ssize_t>(buffer.size())) {
        result = Error::failure("send " + std::to_string(i) + " of " +
                                std::to_string(buffer.size()) + " bytes: " + std::strerror(errno));
        return;
      }
    }
    result = uint64_t{sends} * datagrams;
  });
  sender.join();
  return result;
}

}  // namespace floodgate::test
