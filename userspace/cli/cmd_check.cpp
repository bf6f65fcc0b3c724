// SPDX-License-Identifier: MIT
// `floodgate check FILE [--json]`: validates a config without touching the kernel (no root).
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "common/json_text.h"
#include "config/floodgate_config.h"
#include "floodgate/common/text.h"

namespace floodgate::cli {
namespace {

struct CheckFlags {
  std::string file;
  bool json = false;
};

Status runCheck(const CheckFlags& flags) {
  config::Diagnostics diagnostics;
  config::FloodgateConfig cfg = config::loadConfig(flags.file, diagnostics);
  const bool valid = diagnostics.empty();
  const std::vector<std::string> warnings =
      valid ? config::configWarnings(cfg) : std::vector<std::string>{};
  if (flags.json) {
    // The same keys whether or not the file is valid (docs/config.md): an invalid file's
    // counts are 0, since what parsed of it is not what would be enforced.
    auto count = [valid](size_t n) { return valid ? n : size_t{0}; };
    nlohmann::json out = {{"file", flags.file}, {"valid", valid}, {"warnings", warnings}};
    out["rules"] = count(cfg.rules.size());
    out["interfaces"] = count(cfg.interfaces.size());
    out["allow"] = count(cfg.allow ? cfg.allow->size() : 0);
    out["deny"] = count(cfg.deny ? cfg.deny->size() : 0);
    out["http_policies"] = count(cfg.http ? cfg.http->policies.size() : 0);
    nlohmann::json list = nlohmann::json::array();
    for (const config::Diagnostic& d : diagnostics.items()) {
      list.push_back(
          {{"file", d.file}, {"line", d.line}, {"column", d.column}, {"message", d.message}});
    }
    out["diagnostics"] = std::move(list);
    out["diagnostics_omitted"] = diagnostics.omitted();
    std::cout << jsonText(out) << "\n";
  } else if (valid) {
    std::string summary = flags.file + ": ok, " + counted(cfg.rules.size(), "rule", "rules") +
                          ", " + counted(cfg.interfaces.size(), "interface", "interfaces");
    if (cfg.http)
      summary += ", " + counted(cfg.http->policies.size(), "http policy", "http policies");
    std::cout << summary << "\n";
    for (const std::string& warning : warnings) std::cout << "warning: " << warning << "\n";
  } else {
    std::cout << diagnostics.format();
  }
  std::cout.flush();  // before main's error line on stderr, so a terminal shows them in order
  if (valid) return okStatus();
  return Error::failure(flags.file + " is not valid (" +
                        counted(diagnostics.size(), "problem", "problems") + ")");
}

}  // namespace

void addCheckCommand(CLI::App& app, Action& selected) {
  auto flags = std::make_shared<CheckFlags>();
  CLI::App* cmd =
      app.add_subcommand("check", "Validate a config file without touching the kernel (no root)");
  cmd->add_option("file", flags->file, "The YAML config, e.g. config/floodgate.yaml")->required();
  cmd->add_flag("--json", flags->json, "Print the result as JSON");
  cmd->callback([flags, &selected] { selected = [flags] { return runCheck(*flags); }; });
}

}  // namespace floodgate::cli
