// SPDX-License-Identifier: MIT
// A setting that names a file of secret text: a Redis password, the fleet's secret.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "floodgate/common/result.h"
#include "floodgate/yaml/yaml_reader.h"

namespace floodgate::http {

struct FileSetting {
  std::string path;
  std::string text;
};

// Reads the file `entry` names with `load` (which checks it: see secret_file.h) into a
// FileSetting; `field` names the setting in errors ("fleet.bans.secret_file"). The path must
// be absolute: the config is published to services on other hosts and read by commands run
// from anywhere, and only an absolute path means the same file to all of them. Nothing
// after an error, which `reader` holds.
using FileLoader =
    std::function<Result<std::string>(const std::string& path, const std::string& field)>;
std::optional<FileSetting> readFileSetting(config::YamlReader& reader,
                                           const config::YamlEntry& entry, const std::string& field,
                                           const FileLoader& load);

}  // namespace floodgate::http
