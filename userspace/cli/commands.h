// SPDX-License-Identifier: MIT
// The subcommands of the floodgate CLI: each file declares its flags and calls the library.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

#include "floodgate/common/result.h"

namespace floodgate::cli {

// The work a subcommand leaves behind once its flags parsed; main runs it and maps its
// Error to an exit code (usage 2, failure 1).
using Action = std::function<Status()>;

// The positional INTERFACE argument of a verb, checked (common/text.h) before anything
// touches a path: a bad name is a usage error, exit 2, and changes nothing.
CLI::Option* addInterfaceArgument(CLI::App* cmd, std::string& interface, const std::string& help);

void addAttachCommand(CLI::App& app, Action& selected);
void addDetachCommand(CLI::App& app, Action& selected);
void addStatusCommand(CLI::App& app, Action& selected);
void addStatsCommand(CLI::App& app, Action& selected);
void addTopCommand(CLI::App& app, Action& selected);
void addLearnCommand(CLI::App& app, Action& selected);
void addListCommands(CLI::App& app, Action& selected);  // allow, deny
void addLabCommand(CLI::App& app, Action& selected);
void addSetCommand(CLI::App& app, Action& selected);
void addBanCommand(CLI::App& app, Action& selected);
void addReloadCommand(CLI::App& app, Action& selected);
void addCheckCommand(CLI::App& app, Action& selected);
void addRunCommand(CLI::App& app, Action& selected);
void addFloodCommand(CLI::App& app, Action& selected);
void addHttpCommand(CLI::App& app, Action& selected);   // http publish
void addChainCommand(CLI::App& app, Action& selected);  // chain set, chain remove

}  // namespace floodgate::cli
