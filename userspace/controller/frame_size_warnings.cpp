// SPDX-License-Identifier: MIT
// frameSizeWarnings: byte buckets against the interface's MTU.
#include "controller/frame_size_warnings.h"

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cstring>

#include "kernel/unique_fd.h"

namespace floodgate {
namespace {

// The bytes a rule's bps limit admits at once: a token bucket's burst_bytes, a window's
// bps × window. 0: no bps limit.
uint64_t bucketBytes(const RuleSpec& rule, const LimitSpec& limit) {
  if (limit.bits_per_s == 0) return 0;
  if (rule.algorithm == Algorithm::kTokenBucket) return limit.burst_bytes;
  return static_cast<uint64_t>(static_cast<unsigned __int128>(limit.bits_per_s) * rule.window_ns /
                               8'000'000'000ULL);
}

}  // namespace

std::vector<std::string> frameSizeWarnings(const AttachOptions& options, uint64_t mtu) {
  std::vector<std::string> out;
  const uint64_t frame = largestFrameBytes(mtu);
  for (const RuleSpec& rule : options.rules) {
    for (const auto& [limit, what] :
         {std::pair{&rule.limit, ""}, {&rule.untracked, " untracked"}}) {
      const uint64_t bytes = bucketBytes(rule, *limit);
      if (bytes == 0 || bytes >= frame) continue;
      const std::string fix = rule.algorithm == Algorithm::kTokenBucket
                                  ? "raise its" + std::string(what) + " burst_bytes to at least " +
                                        std::to_string(frame)
                                  : "raise its" + std::string(what) + " bps or its window";
      out.push_back("rule '" + rule.name + "'" + what + ": its bps limit admits " +
                    std::to_string(bytes) + " bytes at once, less than the " +
                    std::to_string(frame) + "-byte frames " + options.interface + " carries (MTU " +
                    std::to_string(mtu) +
                    "): such a frame never passes, and under on_exceed: ban it bans its "
                    "sender; " +
                    fix);
    }
  }
  return out;
}

std::optional<uint64_t> interfaceMtu(const std::string& interface) {
  UniqueFd fd(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.valid() || interface.size() >= IFNAMSIZ) return std::nullopt;
  ifreq request{};
  std::memcpy(request.ifr_name, interface.data(), interface.size());
  if (ioctl(fd.get(), SIOCGIFMTU, &request) != 0 || request.ifr_mtu <= 0) return std::nullopt;
  return static_cast<uint64_t>(request.ifr_mtu);
}

std::vector<std::string> frameSizeWarnings(const AttachOptions& options) {
  const std::optional<uint64_t> mtu = interfaceMtu(options.interface);
  return mtu ? frameSizeWarnings(options, *mtu) : std::vector<std::string>{};
}

}  // namespace floodgate
