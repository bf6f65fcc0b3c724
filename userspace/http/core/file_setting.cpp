// SPDX-License-Identifier: MIT
// readFileSetting: an absolute path, then the file's checked text.
#include "floodgate/core/file_setting.h"

namespace floodgate::http {

std::optional<FileSetting> readFileSetting(config::YamlReader& reader,
                                           const config::YamlEntry& entry, const std::string& field,
                                           const FileLoader& load) {
  auto path = reader.text(entry, field);
  if (!path) return std::nullopt;
  if (path->empty() || path->front() != '/') {
    reader.error(entry, field + " must be an absolute path, got '" + *path + "'");
    return std::nullopt;
  }
  auto text = load(*path, field);
  if (!text) {
    reader.error(entry, text.error().message);
    return std::nullopt;
  }
  return FileSetting{*path, std::move(*text)};
}

}  // namespace floodgate::http
