// SPDX-License-Identifier: MIT
// readWholeFile: open without blocking, look at what the path is, then read at most the cap.
#include "floodgate/common/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace floodgate {
namespace {

// Closes the descriptor on every way out.
struct ClosedOnExit {
  int fd;
  ~ClosedOnExit() {
    if (fd >= 0) close(fd);
  }
};

const char* kindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string sizeText(uint64_t bytes) {
  return bytes % (1 << 20) == 0 ? std::to_string(bytes >> 20) + " MiB"
                                : std::to_string(bytes) + " bytes";
}

}  // namespace

Result<std::string> readWholeFile(const std::string& path, uint64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO with no writer must not hang the caller
  const ClosedOnExit fd{open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)};
  if (fd.fd < 0) return Error::failure(std::strerror(errno));
  struct stat info {};
  if (fstat(fd.fd, &info) != 0) return Error::failure(std::strerror(errno));
  if (!S_ISREG(info.st_mode)) {
    return Error::failure(std::string("not a regular file (") + kindOf(info.st_mode) + ")");
  }
  const std::string too_large = "larger than " + sizeText(max_bytes) + ", the most it may be";
  if (static_cast<uint64_t>(info.st_size) > max_bytes) return Error::failure(too_large);
  std::string text;
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = read(fd.fd, buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::failure(std::strerror(errno));
    }
    if (n == 0) break;
    // a file that grows while it is read (or says it is empty, as /proc does) is held to
    // the same cap
    if (text.size() + static_cast<size_t>(n) > max_bytes) return Error::failure(too_large);
    text.append(buffer, static_cast<size_t>(n));
  }
  return text;
}

Result<std::string> readConfigFile(const std::string& path) {
  Result<std::string> text = readWholeFile(path, kMaxConfigBytes);
  if (!text) return Error::failure(path + ": cannot read the config file: " + text.error().message);
  return text;
}

}  // namespace floodgate
