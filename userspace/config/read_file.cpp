// SPDX-License-Identifier: MIT
// readWholeFile with stdio, so errno says why a path could not be read (EISDIR included).
#include "config/read_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace floodgate::config {
namespace {

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};

}  // namespace

Result<std::string> readWholeFile(const std::string& path) {
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file) return Error::failure(std::strerror(errno));
  std::string text;
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file.get())) > 0) text.append(buffer, n);
  // fopen succeeds on a directory; the read is what fails, with EISDIR.
  if (std::ferror(file.get())) return Error::failure(std::strerror(errno));
  return text;
}

}  // namespace floodgate::config
