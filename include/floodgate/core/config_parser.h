// SPDX-License-Identifier: MIT
// Reads the `http:` section of the shared YAML config into an HttpConfig, with positions.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "floodgate/common/result.h"
#include "floodgate/core/policy.h"
#include "floodgate/yaml/diagnostics.h"
#include "floodgate/yaml/yaml_reader.h"

namespace floodgate::http {

// Parses the node under the top-level `http:` key. Every problem is added to `diagnostics`
// as `file:line:column: message`; the result is meaningful only if none were added.
// Other top-level keys are not looked at (the config's own validator owns them).
HttpConfig parseHttpSection(const YAML::Node& http, const std::string& file,
                            config::Diagnostics& diagnostics);

// The same, read with the reader of the whole file (floodgate.yaml's): `http` is the top-level
// key and its value. Not thread-safe (nor is the reader).
HttpConfig parseHttpSection(config::YamlReader& reader, const config::YamlEntry& http);

// Loads `path` and parses its `http:` section. The error lists every diagnostic, one per
// line (kFailure: the file is wrong, not the command line).
Result<HttpConfig> loadHttpConfig(const std::string& path);

// Same, from YAML text; `file` names it in diagnostics.
Result<HttpConfig> parseHttpConfigText(const std::string& text, const std::string& file);

}  // namespace floodgate::http
