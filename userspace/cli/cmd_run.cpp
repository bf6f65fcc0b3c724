// SPDX-License-Identifier: MIT
// `floodgate run --config FILE [--metrics-listen ADDR:PORT] [--keep-attached]`: the daemon
// that keeps every configured interface's limiter in line with the file and serves metrics.
#include <memory>

#include "cli/commands.h"
#include "daemon/daemon.h"
#include "kernel/system.h"

namespace floodgate::cli {
namespace {

struct RunFlags {
  std::string config;
  std::string listen = "127.0.0.1:9477";
  bool keep_attached = false;
};

Status run(const RunFlags& flags) {
  auto listen = daemon::parseListenAddress(flags.listen);
  if (!listen) return listen.error();
  if (Status s = checkPrivileges(); !s) return s;
  return daemon::runDaemon({flags.config, *listen, flags.keep_attached});
}

}  // namespace

void addRunCommand(CLI::App& app, Action& selected) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* cmd = app.add_subcommand("run",
                                     "Run as a service: attach the config's interfaces, reload on "
                                     "SIGHUP or change, serve metrics");
  cmd->add_option("--config", flags->config, "floodgate.yaml")->required();
  cmd->add_option("--metrics-listen", flags->listen, "Address of /metrics and /healthz (ADDR:PORT)")
      ->capture_default_str();
  cmd->add_flag("--keep-attached", flags->keep_attached,
                "On SIGTERM leave the limiters attached and enforcing (a later run adopts them)");
  cmd->callback([flags, &selected] { selected = [flags] { return run(*flags); }; });
}

}  // namespace floodgate::cli
