// SPDX-License-Identifier: MIT
// writeFileAtomically: temp file + fsync + rename + directory fsync.
#include "floodgate/fleet/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace floodgate::http {

namespace {

Status failed(const std::string& what, const std::string& path) {
  return Error::failure("cannot " + what + " " + path + ": " + std::strerror(errno) +
                        " (check that the directory exists and is writable)");
}

}  // namespace

Status writeFileAtomically(const std::string& path, const std::string& text) {
  std::filesystem::path target(path);
  std::filesystem::path dir = target.parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);  // an error shows at mkstemp, with its path

  // Same directory, so the rename cannot cross file systems; a dot name, so a watcher of
  // `path` (matching its name) never reads the temporary file.
  std::string temp = (dir / ("." + target.filename().string() + ".XXXXXX")).string();
  int fd = mkostemp(temp.data(), O_CLOEXEC);
  if (fd < 0) return failed("create a temporary file in", dir.string());
  auto fail = [&](const std::string& what) {
    Status s = failed(what, temp);
    close(fd);
    unlink(temp.c_str());
    return s;
  };
  for (size_t done = 0; done < text.size();) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("write");
    done += static_cast<size_t>(n);
  }
  if (fchmod(fd, 0644) != 0) return fail("chmod");
  if (fsync(fd) != 0) return fail("fsync");
  if (close(fd) != 0) {
    unlink(temp.c_str());
    return failed("close", temp);
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    Status s = failed("rename a temporary file over", path);
    unlink(temp.c_str());
    return s;
  }
  // The rename itself is durable only once the directory is.
  int dir_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    fsync(dir_fd);
    close(dir_fd);
  }
  return okStatus();
}

}  // namespace floodgate::http
