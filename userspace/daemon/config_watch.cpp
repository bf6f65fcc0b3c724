// SPDX-License-Identifier: MIT
// ConfigWatch: a watch on the config's directory and one on its target's, events filtered
// by the file's name there, and any other event in them checked against the file's identity.
#include "daemon/config_watch.h"

#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace floodgate::daemon {
namespace {

// CLOSE_WRITE: written in place; MOVED_TO/CREATE: a new file or link renamed or made there.
constexpr uint32_t kWatchMask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE;

ConfigWatch::Identity identify(const std::string& path) {
  ConfigWatch::Identity out;
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return out;
  out.dev = st.st_dev;
  out.ino = st.st_ino;
  out.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  out.size = st.st_size;
  return out;
}

}  // namespace

Result<ConfigWatch> ConfigWatch::start(const std::string& config_path) {
  std::filesystem::path path(config_path);
  std::filesystem::path dir = path.parent_path();
  if (dir.empty()) dir = ".";
  ConfigWatch out;
  out.path_ = config_path;
  out.dir_ = dir.string();
  out.name_ = path.filename().string();
  out.fd_ = UniqueFd(inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!out.fd_.valid()) return Error::failure(std::string("inotify: ") + std::strerror(errno));
  out.dir_wd_ = inotify_add_watch(out.fd_.get(), out.dir_.c_str(), kWatchMask);
  if (out.dir_wd_ < 0) {
    return Error::failure("cannot watch " + out.dir_ +
                          " for config changes: " + std::strerror(errno));
  }
  out.followTarget();
  out.seen_ = identify(config_path);
  return out;
}

// Watches the directory of the file the config path resolves to now (the link's target may
// have moved: a ConfigMap's new timestamped directory), and no longer the one before.
void ConfigWatch::followTarget() {
  std::error_code ec;
  std::filesystem::path target = std::filesystem::canonical(path_, ec);
  if (ec) return;  // the path names nothing now: its directory's watch sees it come back
  std::string target_dir = target.parent_path().string();
  target_name_ = target.filename().string();
  if (target_dir == target_dir_) return;
  if (target_wd_ >= 0 && target_wd_ != dir_wd_) inotify_rm_watch(fd_.get(), target_wd_);
  target_dir_ = target_dir;
  // the same directory as the config's gives back its watch descriptor
  target_wd_ = inotify_add_watch(fd_.get(), target_dir_.c_str(), kWatchMask);
}

// An event for the config's own name, in its directory or its target's. A file created
// under that name is complete only when it is a link or a second name of an existing file;
// a new regular file is still being written, and its CLOSE_WRITE is the event to act on.
bool ConfigWatch::ownEvent(const std::string& dir, uint32_t mask, const char* name,
                           bool* being_written) const {
  if (!(mask & IN_CREATE)) return true;
  struct stat st {};
  const std::string at = dir + "/" + name;
  if (lstat(at.c_str(), &st) == 0 && !S_ISLNK(st.st_mode) && st.st_nlink < 2) {
    *being_written = true;
    return false;
  }
  return true;
}

bool ConfigWatch::drain() {
  bool ours = false, other = false, being_written = false;
  alignas(inotify_event) char buf[8192];
  while (true) {
    ssize_t n = read(fd_.get(), buf, sizeof(buf));
    if (n <= 0) break;  // EAGAIN: drained
    for (char* p = buf; p < buf + n;) {
      auto* event = reinterpret_cast<inotify_event*>(p);
      p += sizeof(inotify_event) + event->len;
      if (event->len == 0) continue;  // about a directory itself (IN_IGNORED)
      const bool in_dir = event->wd == dir_wd_ && name_ == event->name;
      const bool in_target = event->wd == target_wd_ && target_name_ == event->name;
      if (!in_dir && !in_target) {
        other = true;
      } else if (ownEvent(in_dir ? dir_ : target_dir_, event->mask, event->name, &being_written)) {
        ours = true;
      }
    }
  }
  // Another name changed: a link on the way to the file may now point elsewhere. The file
  // the path names is then another one, or changed; a neighbour's write leaves it as it was.
  // A path that names nothing now has nothing to reload; its return is a change.
  Identity now = identify(path_);
  if (other && !being_written && now != seen_ && now.size >= 0) ours = true;
  seen_ = now;
  followTarget();
  return ours;
}

}  // namespace floodgate::daemon
