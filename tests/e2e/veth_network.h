// SPDX-License-Identifier: MIT
// VethNetwork: two network namespaces joined by a veth pair (two queues each side, so both
// CPUs carry traffic), created for one test and removed with its pins even if it fails.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/command.h"
#include "floodgate/common/result.h"

namespace floodgate::test {

class VethNetwork {
 public:
  // `sources` addresses go on the sending side; the receiving side is kTargetAddress.
  static Result<std::unique_ptr<VethNetwork>> create(const std::vector<std::string>& sources);
  ~VethNetwork();
  VethNetwork(const VethNetwork&) = delete;
  VethNetwork& operator=(const VethNetwork&) = delete;

  static constexpr const char* kTargetAddress = "198.18.0.1";

  const std::string& senderNetns() const { return sender_ns_path_; }
  const std::string& targetNetns() const { return target_ns_path_; }
  // The interface floodgate protects (inside the target namespace).
  const std::string& targetInterface() const { return target_if_; }
  // Its peer, in the sending namespace: what `floodgate flood` sends out of.
  const std::string& senderInterface() const { return sender_if_; }

  // Deletes the veth pair (if it is still there) and makes it again under the same names and
  // addresses (what a restarted network service or a reloaded driver does to an interface):
  // a new device, with another ifindex and no XDP program.
  Status remake();
  // Renames the target interface to `renamed` (down first) and makes another veth under its
  // old name (its peer named `peer`), in the target namespace: a limiter's device renamed,
  // its name taken by another.
  Status renameTarget(const std::string& renamed, const std::string& peer);

  // Packets the sending veth dropped because the receiving side's queue was full: they
  // never reached XDP. On a busy machine a flood makes some; tests account for them.
  uint64_t senderQueueDrops() const;

  // Runs `floodgate ARGS...` inside the target namespace.
  CommandResult floodgate(const std::vector<std::string>& args) const;
  // Runs a command inside the target namespace.
  CommandResult inTarget(const std::vector<std::string>& argv) const;
  // Runs a command inside the sending namespace.
  CommandResult inSender(const std::vector<std::string>& argv) const;
  // Runs `floodgate ARGS...` inside the sending namespace.
  CommandResult floodgateInSender(const std::vector<std::string>& args) const;

 private:
  VethNetwork() = default;
  // Makes the veth pair between the two namespaces, with its addresses, up.
  Status join();
  std::vector<std::string> sources_;
  std::string sender_ns_, target_ns_, sender_ns_path_, target_ns_path_, sender_if_, target_if_;
};

}  // namespace floodgate::test
