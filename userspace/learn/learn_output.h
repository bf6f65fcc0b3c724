// SPDX-License-Identifier: MIT
// What `floodgate learn` prints and writes: the report as text or JSON, the proposal as a
// YAML fragment of `rules:`, and as a diff of the limits against a config file.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "controller/rule_spec.h"
#include "learn/learner.h"

namespace floodgate::learn {

// "99.9" for 99900 thousandths: a figure in thousandths, without trailing zeros.
std::string formatMilli(uint64_t milli);

std::string reportText(const std::string& interface, const LearnReport& report);
nlohmann::json reportJson(const std::string& interface, const LearnReport& report);

// `rules:` with each proposed rule's name and limit (its bps limit, if any, as it is).
std::string proposalYaml(const std::string& interface, const LearnReport& report);

// The rules of a config file, as the diff needs them: the file's text (for line numbers)
// and each rule's name and limit.
struct ConfigRules {
  std::string path;
  std::string text;
  std::vector<RuleSpec> rules;
};

// For every rule of `config` whose proposed limit differs, a hunk of the old and new
// `limit:` lines, in unified-diff form; a line for proposals of rules the file lacks.
std::string proposalDiff(const ConfigRules& config, const LearnReport& report);

}  // namespace floodgate::learn
