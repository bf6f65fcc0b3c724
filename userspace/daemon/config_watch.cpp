// SPDX-License-Identifier: MIT
// ConfigWatch: one watch on the directory, events filtered by the file's name.
#include "daemon/config_watch.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace floodgate::daemon {

Result<ConfigWatch> ConfigWatch::start(const std::string& config_path) {
  std::filesystem::path path(config_path);
  std::filesystem::path dir = path.parent_path();
  if (dir.empty()) dir = ".";
  ConfigWatch out;
  out.name_ = path.filename().string();
  out.fd_ = UniqueFd(inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!out.fd_.valid()) return Error::failure(std::string("inotify: ") + std::strerror(errno));
  // CLOSE_WRITE: written in place; MOVED_TO/CREATE: a new file renamed or linked over it.
  if (inotify_add_watch(out.fd_.get(), dir.c_str(), IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE) < 0) {
    return Error::failure("cannot watch " + dir.string() +
                          " for config changes: " + std::strerror(errno));
  }
  return out;
}

bool ConfigWatch::drain() {
  bool ours = false;
  alignas(inotify_event) char buf[8192];
  while (true) {
    ssize_t n = read(fd_.get(), buf, sizeof(buf));
    if (n <= 0) break;  // EAGAIN: drained
    for (char* p = buf; p < buf + n;) {
      auto* event = reinterpret_cast<inotify_event*>(p);
      if (event->len > 0 && name_ == event->name) ours = true;
      p += sizeof(inotify_event) + event->len;
    }
  }
  return ours;
}

}  // namespace floodgate::daemon
