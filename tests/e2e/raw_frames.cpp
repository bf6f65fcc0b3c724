// SPDX-License-Identifier: MIT
// sendFrames: an AF_PACKET socket on a thread that has entered the namespace.
#include "e2e/raw_frames.h"

#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "kernel/unique_fd.h"
#include "udp_traffic/udp_traffic.h"

namespace floodgate::test {

Result<uint64_t> sendFrames(const std::string& netns, const std::string& interface,
                            const std::vector<std::vector<uint8_t>>& frames) {
  Result<uint64_t> result = Error::failure("not run");
  // a thread of its own: setns moves only the calling thread
  std::thread sender([&] {
    if (Status s = enterNetns(netns); !s) {
      result = s.error();
      return;
    }
    UniqueFd fd(socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0));  // protocol 0: send only
    if (!fd.valid()) {
      result = Error::failure(std::string("packet socket: ") + std::strerror(errno));
      return;
    }
    sockaddr_ll address{};
    address.sll_family = AF_PACKET;
    address.sll_ifindex = static_cast<int>(if_nametoindex(interface.c_str()));
    if (address.sll_ifindex == 0) {
      result = Error::failure("no interface " + interface + " in " + netns);
      return;
    }
    if (bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
      result = Error::failure(std::string("bind: ") + std::strerror(errno));
      return;
    }
    uint64_t sent = 0;
    for (const auto& frame : frames) {
      if (send(fd.get(), frame.data(), frame.size(), 0) != static_cast<ssize_t>(frame.size())) {
        result = Error::failure("sending frame " + std::to_string(sent) + " of " +
                                std::to_string(frame.size()) + " bytes: " + std::strerror(errno));
        return;
      }
      ++sent;
    }
    result = sent;
  });
  sender.join();
  return result;
}

}  // namespace floodgate::test
