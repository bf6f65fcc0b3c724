// SPDX-License-Identifier: MIT
// `floodgate chain set|remove IFACE`: the XDP program that gets what floodgate passes.
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "controller/next_program.h"

namespace floodgate::cli {
namespace {

struct ChainFlags {
  std::string interface;
  NextProgramSpec next;
};

Status setChain(const ChainFlags& flags) {
  if (flags.next.none())
    return Error::usage("give the next program: --object FILE or --pinned PATH");
  auto change = setNextProgram(flags.interface, flags.next);
  if (!change) return change.error();
  if (!change->changed) {
    std::cout << describeProgram(*change->after) << " is already behind floodgate on "
              << flags.interface << "\n";
    return okStatus();
  }
  std::cout << describeProgram(*change->after) << " now gets what floodgate passes on "
            << flags.interface;
  if (change->before) std::cout << " (it replaced " << describeProgram(*change->before) << ")";
  std::cout << "\n";
  return okStatus();
}

Status removeChain(const ChainFlags& flags) {
  auto change = setNextProgram(flags.interface, NextProgramSpec{});
  if (!change) return change.error();
  if (!change->before) {
    std::cout << "no program was behind floodgate on " << flags.interface << "\n";
  } else {
    std::cout << "removed " << describeProgram(*change->before) << " from behind floodgate on "
              << flags.interface << ": what floodgate passes goes to the kernel (XDP_PASS)\n";
  }
  return okStatus();
}

}  // namespace

void addChainCommand(CLI::App& app, Action& selected) {
  CLI::App* chain =
      app.add_subcommand("chain", "Hand what floodgate passes to another XDP program");
  chain->require_subcommand(1);

  auto set = std::make_shared<ChainFlags>();
  CLI::App* set_cmd =
      chain->add_subcommand("set", "Put an XDP program behind floodgate (replacing one live)");
  addInterfaceArgument(set_cmd, set->interface, "Interface")->required();
  CLI::Option* object =
      set_cmd->add_option("--object", set->next.object, "BPF object file of the program");
  set_cmd
      ->add_option("--section", set->next.section,
                   "Its program's section or function name (default: its only XDP program)")
      ->needs(object);
  set_cmd->add_option("--pinned", set->next.pinned, "Or a pinned XDP program in bpffs")
      ->excludes(object);
  set_cmd->callback([set, &selected] { selected = [set] { return setChain(*set); }; });

  auto remove = std::make_shared<ChainFlags>();
  CLI::App* remove_cmd =
      chain->add_subcommand("remove", "Take the program behind floodgate away (XDP_PASS again)");
  addInterfaceArgument(remove_cmd, remove->interface, "Interface")->required();
  remove_cmd->callback(
      [remove, &selected] { selected = [remove] { return removeChain(*remove); }; });
}

}  // namespace floodgate::cli
