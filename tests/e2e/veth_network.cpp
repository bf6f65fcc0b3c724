// SPDX-License-Identifier: MIT
// VethNetwork: ip netns and veth set-up with iproute2, and its tear-down.
#include "e2e/veth_network.h"

#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

namespace floodgate::test {
namespace {

Status must(const std::vector<std::string>& argv) {
  CommandResult r = runCommand(argv);
  if (r.exit_code == 0) return okStatus();
  std::string line;
  for (const auto& a : argv) line += a + " ";
  return Error::failure(line + "failed: " + r.err);
}

}  // namespace

Result<std::unique_ptr<VethNetwork>> VethNetwork::create(const std::vector<std::string>& sources) {
  static int serial = 0;
  std::string tag = std::to_string(getpid() % 100000) + "x" + std::to_string(serial++);
  std::unique_ptr<VethNetwork> net(new VethNetwork());
  net->sender_ns_ = "fgsend" + tag;
  net->target_ns_ = "fgtarget" + tag;
  net->sender_ns_path_ = "/run/netns/" + net->sender_ns_;
  net->target_ns_path_ = "/run/netns/" + net->target_ns_;
  net->sender_if_ = "fgs" + tag;
  net->target_if_ = "fgt" + tag;
  net->sources_ = sources;
  for (const std::string& ns : {net->sender_ns_, net->target_ns_}) {
    if (Status st = must({"ip", "netns", "add", ns}); !st) return st.error();
    // IPv6 off: neighbour discovery would add packets the tests do not count
    if (Status st =
            must({"ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"});
        !st) {
      return st.error();
    }
    if (Status st = must({"ip", "-n", ns, "link", "set", "lo", "up"}); !st) return st.error();
  }
  if (Status st = net->join(); !st) return st.error();
  return net;
}

Status VethNetwork::join() {
  const std::string& s = sender_ns_;
  const std::string& t = target_ns_;
  std::vector<std::vector<std::string>> steps = {
      {"ip",       "link",        "add", sender_if_,    "numtxqueues", "2",     "numrxqueues",
       "2",        "netns",       s,     "type",        "veth",        "peer",  "name",
       target_if_, "numtxqueues", "2",   "numrxqueues", "2",           "netns", t},
      {"ip", "-n", t, "addr", "add", std::string(kTargetAddress) + "/24", "dev", target_if_},
      {"ip", "-n", s, "link", "set", sender_if_, "up"},
      {"ip", "-n", t, "link", "set", target_if_, "up"},
  };
  for (const std::string& source : sources_) {
    steps.push_back({"ip", "-n", s, "addr", "add", source + "/24", "dev", sender_if_});
  }
  for (const auto& step : steps) {
    if (Status st = must(step); !st) return st;
  }
  // Resolve the neighbour once so no ARP exchange falls inside a measurement.
  CommandResult mac = runCommand({"ip", "-n", t, "-br", "link", "show", target_if_});
  std::string target_mac;
  {
    // "-br" prints: NAME STATE MAC FLAGS
    std::vector<std::string> words;
    std::string word;
    for (char c : mac.out) {
      if (c == ' ' || c == '\n') {
        if (!word.empty()) words.push_back(word);
        word.clear();
      } else {
        word += c;
      }
    }
    if (words.size() >= 3) target_mac = words[2];
  }
  if (!target_mac.empty()) {
    (void)must({"ip", "-n", s, "neigh", "replace", kTargetAddress, "lladdr", target_mac, "dev",
                sender_if_, "nud", "permanent"});
  }
  return okStatus();
}

Status VethNetwork::remake() {
  (void)runCommand({"ip", "-n", target_ns_, "link", "del", target_if_});  // gone already: fine
  return join();
}

Status VethNetwork::renameTarget(const std::string& renamed, const std::string& peer) {
  for (const std::vector<std::string>& step :
       {std::vector<std::string>{"link", "set", target_if_, "down"},
        std::vector<std::string>{"link", "set", target_if_, "name", renamed},
        std::vector<std::string>{"link", "add", target_if_, "type", "veth", "peer", "name",
                                 peer}}) {
    std::vector<std::string> argv = {"ip", "-n", target_ns_};
    argv.insert(argv.end(), step.begin(), step.end());
    CommandResult r = runCommand(argv);
    if (r.exit_code != 0) return Error::failure("ip link " + step[1] + " failed: " + r.err);
  }
  return okStatus();
}

VethNetwork::~VethNetwork() {
  runCommand({"ip", "netns", "del", sender_ns_});
  runCommand({"ip", "netns", "del", target_ns_});
  std::error_code ec;
  std::filesystem::remove_all("/sys/fs/bpf/floodgate/" + target_if_, ec);
}

uint64_t VethNetwork::senderQueueDrops() const {
  CommandResult r =
      runCommand({"ip", "-n", sender_ns_, "-s", "-j", "link", "show", "dev", sender_if_});
  if (r.exit_code != 0) return 0;
  nlohmann::json links = nlohmann::json::parse(r.out, nullptr, false);
  if (links.is_discarded() || links.empty()) return 0;
  return links[0]["stats64"]["tx"]["dropped"].get<uint64_t>();
}

CommandResult VethNetwork::floodgate(const std::vector<std::string>& args) const {
  // nsenter switches only the network namespace; 'ip netns exec' would also give the CLI a
  // private /sys without the host's bpffs, so its pins would not outlive it
  std::vector<std::string> argv = {"nsenter", "--net=" + target_ns_path_, FLOODGATE_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  return runCommand(argv);
}

CommandResult VethNetwork::floodgateInSender(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {"nsenter", "--net=" + sender_ns_path_, FLOODGATE_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  return runCommand(argv);
}

CommandResult VethNetwork::inTarget(const std::vector<std::string>& argv) const {
  std::vector<std::string> full = {"nsenter", "--net=" + target_ns_path_};
  full.insert(full.end(), argv.begin(), argv.end());
  return runCommand(full);
}

CommandResult VethNetwork::inSender(const std::vector<std::string>& argv) const {
  std::vector<std::string> full = {"nsenter", "--net=" + sender_ns_path_};
  full.insert(full.end(), argv.begin(), argv.end());
  return runCommand(full);
}

}  // namespace floodgate::test
