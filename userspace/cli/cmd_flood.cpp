// SPDX-License-Identifier: MIT
// `floodgate flood IFACE --dst IP ...`: a packet generator in the kernel, to rehearse
// rules against millions of packets per second from one core.
#include <signal.h>

#include <atomic>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "common/json_text.h"
#include "flood/flood.h"
#include "floodgate/common/units.h"

namespace floodgate::cli {
namespace {

struct FloodFlags {
  std::string interface;
  std::string dst, src, dst_mac, src_mac;
  uint16_t dst_port = 9;
  uint16_t src_port = 40000;
  std::string protocol = "udp";
  uint32_t size = 0;
  std::string count, duration, rate, sources = "1";
  bool across_64s = false;
  uint32_t batch = 64;
  int cpu = -1;
  bool i_know = false;
  bool json = false;
};

std::atomic<bool> interrupted{false};

Result<flood::FloodOptions> toOptions(const FloodFlags& flags) {
  flood::FloodOptions options;
  options.interface = flags.interface;
  flood::FrameSpec& frame = options.frame;
  auto destination = parseAddress(flags.dst);
  if (!destination) return Error::usage("--dst: " + destination.error().message);
  frame.destination = *destination;
  // the default sources are in the benchmarking range (RFC 2544) and the documentation range
  std::string src = !flags.src.empty()                   ? flags.src
                    : destination->family == Family::kV4 ? "198.18.100.1"
                                                         : "2001:db8:100::1";
  auto source = parseAddress(src);
  if (!source) return Error::usage("--src: " + source.error().message);
  frame.source = *source;
  if (!flags.dst_mac.empty()) {
    auto mac = flood::parseMac(flags.dst_mac);
    if (!mac) return Error::usage("--dst-mac: " + mac.error().message);
    frame.dst_mac = *mac;
  }
  if (!flags.src_mac.empty()) {
    auto mac = flood::parseMac(flags.src_mac);
    if (!mac) return Error::usage("--src-mac: " + mac.error().message);
    frame.src_mac = *mac;
    options.src_mac_given = true;
  }
  auto protocol = flood::parseProtocol(flags.protocol);
  if (!protocol) return protocol.error();
  frame.protocol = *protocol;
  frame.dst_port = flags.dst_port;
  frame.src_port = flags.src_port;
  frame.frame_bytes = flags.size;
  frame.across_64s = flags.across_64s;
  auto sources = parseCount(flags.sources);
  if (!sources) return Error::usage("--sources: " + sources.error().message);
  if (*sources > 0xffffffffULL) return Error::usage("--sources is at most 4G");
  frame.sources = static_cast<uint32_t>(*sources);
  if (!flags.count.empty()) {
    auto count = parseCount(flags.count);
    if (!count) return Error::usage("--count: " + count.error().message);
    options.count = *count;
  }
  if (!flags.duration.empty()) {
    auto duration = parseDuration(flags.duration);
    if (!duration) return Error::usage("--duration: " + duration.error().message);
    options.duration_ns = *duration;
  }
  if (!flags.rate.empty()) {
    auto rate = parseCount(flags.rate);
    if (!rate) return Error::usage("--rate: " + rate.error().message);
    options.rate_pps = *rate;
  }
  options.batch = flags.batch;
  options.cpu = flags.cpu;
  options.i_know = flags.i_know;
  if (Status valid = flood::validateFloodOptions(options); !valid) return valid.error();
  return options;
}

Status runFloodCommand(const FloodFlags& flags) {
  auto options = toOptions(flags);
  if (!options) return options.error();
  // Ctrl-C ends the flood early and still prints what went
  struct sigaction action {};
  action.sa_handler = [](int) { interrupted = true; };
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  auto report = flood::runFlood(*options, &interrupted);
  if (!report) return report.error();
  if (flags.json) {
    std::cout << jsonText(flood::floodJson(*report)) << "\n";
  } else {
    std::cout << flood::floodText(*report);
  }
  return okStatus();
}

}  // namespace

void addFloodCommand(CLI::App& app, Action& selected) {
  auto flags = std::make_shared<FloodFlags>();
  CLI::App* cmd = app.add_subcommand(
      "flood",
      "Rehearsal packet generator: frames made in the kernel, sent out of a veth with XDP_TX");
  addInterfaceArgument(cmd, flags->interface, "Interface to send out of (a veth)")->required();
  cmd->add_option("--dst", flags->dst, "Destination address; its family sets IPv4 or IPv6")
      ->required();
  cmd->add_option("--dst-mac", flags->dst_mac,
                  "Destination MAC (default ff:ff:ff:ff:ff:ff; give the peer's for the stack)");
  cmd->add_option("--dst-port", flags->dst_port, "UDP/TCP destination port (9)");
  cmd->add_option("--src", flags->src, "First source address (198.18.100.1 or 2001:db8:100::1)");
  cmd->add_option("--src-mac", flags->src_mac, "Source MAC (default the interface's)");
  cmd->add_option("--src-port", flags->src_port, "UDP/TCP source port (40000)");
  cmd->add_option("--protocol", flags->protocol, "udp | tcp-syn | icmp (echo request)");
  cmd->add_option("--size", flags->size, "Frame bytes without FCS (default the smallest, >= 60)");
  cmd->add_option("--count", flags->count, "Frames to send (10k, 5M)");
  cmd->add_option("--duration", flags->duration, "How long to send (500ms, 10s)");
  cmd->add_option("--rate", flags->rate, "Target packets per second (default: as fast as it goes)");
  cmd->add_option("--sources", flags->sources,
                  "Distinct source addresses to rotate through, counting up from --src (1)");
  cmd->add_flag("--across-64s", flags->across_64s,
                "IPv6: give each source a /64 of its own (default: all inside --src's /64)");
  cmd->add_option("--batch", flags->batch, "Frames per kernel batch, 1..256 (64)");
  cmd->add_option("--cpu", flags->cpu,
                  "Send from this CPU (the generator and XDP_TX run there; default any)");
  cmd->add_flag("--i-know", flags->i_know, "Allow an interface that is not a veth");
  cmd->add_flag("--json", flags->json, "Machine-readable output");
  cmd->callback([flags, &selected] { selected = [flags] { return runFloodCommand(*flags); }; });
}

}  // namespace floodgate::cli
