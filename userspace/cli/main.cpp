// SPDX-License-Identifier: MIT
// Entry point of the floodgate CLI: parses, runs one subcommand, prints one line on error.
#include <iostream>

#include "cli/commands.h"

namespace {

// `floodgate run` logs for journald, every line with its syslog priority (daemon/log.h):
// its last line, the error it stops on, is one of them.
const char* errorPrefix(const CLI::App& app) { return app.got_subcommand("run") ? "<3>" : ""; }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"floodgate: an XDP rate limiter for floods at the NIC", "floodgate"};
  app.require_subcommand(1);
  app.set_version_flag("--version", FLOODGATE_VERSION);

  floodgate::cli::Action selected;
  floodgate::cli::addAttachCommand(app, selected);
  floodgate::cli::addDetachCommand(app, selected);
  floodgate::cli::addStatusCommand(app, selected);
  floodgate::cli::addStatsCommand(app, selected);
  floodgate::cli::addTopCommand(app, selected);
  floodgate::cli::addLearnCommand(app, selected);
  floodgate::cli::addListCommands(app, selected);
  floodgate::cli::addSetCommand(app, selected);
  floodgate::cli::addBanCommand(app, selected);
  floodgate::cli::addReloadCommand(app, selected);
  floodgate::cli::addLabCommand(app, selected);
  floodgate::cli::addCheckCommand(app, selected);
  floodgate::cli::addRunCommand(app, selected);
  floodgate::cli::addFloodCommand(app, selected);
  floodgate::cli::addHttpCommand(app, selected);
  floodgate::cli::addChainCommand(app, selected);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // CLI11 says only "A subcommand is required" for a mistyped command: name the word
    if (argc > 1 && argv[1][0] != '-' && app.get_subcommands().empty()) {
      std::cerr << "floodgate: error: '" << argv[1]
                << "' is not a floodgate command (see 'floodgate --help' for the commands)\n";
      return 2;
    }
    std::cerr << errorPrefix(app) << "floodgate: error: " << e.what()
              << " (see 'floodgate --help')\n";
    return 2;
  }
  if (!selected) return 0;
  floodgate::Status status = selected();
  if (!status.ok()) {
    std::cerr << errorPrefix(app) << "floodgate: error: " << status.error().message << "\n";
    return static_cast<int>(status.error().kind);
  }
  return 0;
}
