// SPDX-License-Identifier: MIT
// parseRedisLogin: a section's username and password_file.
#include "floodgate/core/redis_login.h"

#include "floodgate/core/file_setting.h"
#include "floodgate/core/secret_file.h"

namespace floodgate::http {

bool parseRedisLogin(config::YamlReader& reader, const config::YamlFields& fields,
                     const std::string& section, StoreConfig& store) {
  bool ok = true;
  const config::YamlEntry* username = fields.find("username");
  const config::YamlEntry* file = fields.find("password_file");
  if (username) {
    auto text = reader.text(*username, section + ".username");
    if (text) store.username = *text;
    ok &= text.has_value();
    if (!file) {
      reader.error(*username, section + ".username needs password_file: PATH, its password");
      ok = false;
    }
  }
  if (!file) return ok;
  auto password = readFileSetting(reader, *file, section + ".password_file", loadRedisPassword);
  if (!password) return false;
  store.password_file = std::move(password->path);
  store.password = std::move(password->text);
  return ok;
}

}  // namespace floodgate::http
