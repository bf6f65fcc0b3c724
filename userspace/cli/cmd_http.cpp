// SPDX-License-Identifier: MIT
// `floodgate http publish --config FILE`: hands the config's http: policies to services once
// (what `floodgate run` does on start and on every reload), where http.publish says.
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "config/floodgate_config.h"
#include "floodgate/common/text.h"
#include "floodgate/fleet/policy_publisher.h"

namespace floodgate::cli {
namespace {

// The whole of floodgate.yaml is checked first, as `run` would: services are never handed
// policies from a file whose other sections the controller refuses.
Status publish(const std::string& config) {
  std::string text;
  config::Diagnostics diagnostics;
  config::loadConfig(config, diagnostics, &text);
  if (!diagnostics.empty()) {
    std::cerr << diagnostics.format();
    return Error::failure(config + " is not valid (" +
                          counted(diagnostics.size(), "problem", "problems") +
                          ", above): nothing was published");
  }
  auto report = http::publishHttpPolicyText(text, config);
  if (!report) return report.error();
  std::cout << report->describe() << "\n";
  return okStatus();
}

}  // namespace

void addHttpCommand(CLI::App& app, Action& selected) {
  CLI::App* http = app.add_subcommand("http", "libfloodgate's policies: hand them to services");
  http->require_subcommand(1);
  auto config = std::make_shared<std::string>();
  CLI::App* cmd = http->add_subcommand(
      "publish", "Publish the config's http: section once, where http.publish says (no root)");
  cmd->add_option("--config", *config, "floodgate.yaml with http.publish")->required();
  cmd->callback([config, &selected] { selected = [config] { return publish(*config); }; });
}

}  // namespace floodgate::cli
