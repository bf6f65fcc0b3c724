// SPDX-License-Identifier: MIT
// floodgate-udp-traffic: a test tool that floods from one address while another sends steadily,
// and prints per source what was sent, what arrived past the limiter and what did not.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <thread>

#include "udp_traffic/udp_traffic.h"

namespace {

struct Flags {
  std::string sender_netns, receiver_netns, to, flood, steady;
  unsigned flood_threads = 2;
  uint64_t steady_pps = 100;
  double seconds = 5;
  uint16_t port = 9999;
};

void printRow(const char* role, const std::string& source, uint64_t sent, uint64_t passed) {
  std::printf("%-9s %-16s %12llu %12llu %12llu\n", role, source.c_str(),
              static_cast<unsigned long long>(sent), static_cast<unsigned long long>(passed),
              static_cast<unsigned long long>(sent > passed ? sent - passed : 0));
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  CLI::App app{"Test UDP traffic through a limiter: one flooding source, one steady source"};
  app.add_option("--sender-netns", flags.sender_netns, "Network namespace path of the senders")
      ->required();
  app.add_option("--receiver-netns", flags.receiver_netns, "Network namespace path of the receiver")
      ->required();
  app.add_option("--to", flags.to, "Destination address (in the receiver namespace)")->required();
  app.add_option("--port", flags.port, "Destination UDP port");
  app.add_option("--flood", flags.flood, "Address that floods as fast as it can")->required();
  app.add_option("--flood-threads", flags.flood_threads, "Flooding threads (one per CPU)");
  app.add_option("--steady", flags.steady, "Address that sends at --steady-pps")->required();
  app.add_option("--steady-pps", flags.steady_pps, "Rate of the steady source");
  app.add_option("--seconds", flags.seconds, "How long both send")->check(CLI::Range(0.1, 60.0));
  CLI11_PARSE(app, argc, argv);

  floodgate::UdpCounter receiver;
  if (auto s = receiver.start(flags.receiver_netns, flags.port); !s) {
    std::cerr << "floodgate-udp-traffic: error: " << s.error().message << "\n";
    return 1;
  }
  floodgate::UdpSendOptions flood{
      flags.sender_netns,  flags.flood, flags.to, flags.port, flags.seconds, 0,
      flags.flood_threads, 18};
  floodgate::UdpSendOptions steady{flags.sender_netns, flags.steady,     flags.to, flags.port,
                                   flags.seconds,      flags.steady_pps, 1,        18};
  floodgate::Result<floodgate::UdpSendResult> steady_result = floodgate::Error::failure("not run");
  std::thread steady_thread([&] { steady_result = floodgate::sendUdp(steady); });
  auto flood_result = floodgate::sendUdp(flood);
  steady_thread.join();
  usleep(200000);
  auto received = receiver.stop();
  for (const auto* result : {&flood_result, &steady_result}) {
    if (!result->ok()) {
      std::cerr << "floodgate-udp-traffic: error: " << result->error().message << "\n";
      return 1;
    }
  }
  std::printf("%-9s %-16s %12s %12s %12s\n", "role", "source", "sent", "passed", "dropped");
  printRow("flooding", flags.flood, flood_result->sent, received[flags.flood]);
  printRow("steady", flags.steady, steady_result->sent, received[flags.steady]);
  std::printf("over %.2f s: the flooder sent %.0f packets/s\n", flood_result->elapsed(),
              static_cast<double>(flood_result->sent) / std::max(flood_result->elapsed(), 1e-9));
  return 0;
}
