// SPDX-License-Identifier: MIT
// RunLock: flock(2) on a file per network namespace under /run/floodgate.
#include "daemon/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "kernel/attach_lock.h"

namespace floodgate::daemon {

Result<std::string> RunLock::path() {
  struct stat ns {};
  if (stat("/proc/self/ns/net", &ns) != 0) {
    return Error::failure(std::string("cannot tell this process's network namespace: ") +
                          std::strerror(errno));
  }
  return std::string(AttachLock::kDirectory) + "/run-net" + std::to_string(ns.st_ino) + ".lock";
}

Result<RunLock> RunLock::acquire() {
  auto file = path();
  if (!file) return file.error();
  if (mkdir(AttachLock::kDirectory, 0755) != 0 && errno != EEXIST) {
    return Error::failure(std::string("cannot create ") + AttachLock::kDirectory + ": " +
                          std::strerror(errno));
  }
  UniqueFd fd(open(file->c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd.valid()) {
    return Error::failure("cannot open " + *file + ": " + std::strerror(errno));
  }
  if (flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) {
      return Error::failure("cannot lock " + *file + ": " + std::strerror(errno));
    }
    char text[32] = {};
    std::string pid;
    if (pread(fd.get(), text, sizeof(text) - 1, 0) > 0) {
      for (const char* c = text; *c >= '0' && *c <= '9'; ++c) pid += *c;
    }
    const std::string holder = pid.empty() ? "" : " (pid " + pid + ")";
    return Error::failure("another floodgate run" + holder +
                          " holds this network namespace's interfaces: nothing was changed; "
                          "stop it first, or edit its config and reload it (SIGHUP)");
  }
  const std::string pid = std::to_string(getpid()) + "\n";
  if (ftruncate(fd.get(), 0) != 0 ||
      pwrite(fd.get(), pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    return Error::failure("cannot write " + *file + ": " + std::strerror(errno));
  }
  return RunLock(std::move(fd));
}

}  // namespace floodgate::daemon
