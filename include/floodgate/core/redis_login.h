// SPDX-License-Identifier: MIT
// The login to a Redis that asks for one (requirepass, or an ACL user), as a section naming
// Redis servers (http.store, fleet.bans) gives it: `username` and `password_file`.
#pragma once

#include <string>

#include "floodgate/core/policy.h"
#include "floodgate/yaml/yaml_reader.h"

namespace floodgate::http {

// Reads `username` and `password_file` of `fields` into `store` (the password from its
// file: an absolute path, as the config is published to other hosts, readable by this
// user only and its group); `section` names them in errors ("http.store"). False after an
// error, which `reader` holds.
bool parseRedisLogin(config::YamlReader& reader, const config::YamlFields& fields,
                     const std::string& section, StoreConfig& store);

}  // namespace floodgate::http
