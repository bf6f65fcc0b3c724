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
// Buffers of events read per drain at most.
constexpr int kMaxReads = 16;

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
  // the same directory as the config's gives back its watch descriptor; one that cannot be
  // watched is tried again at the next event
  target_wd_ = inotify_add_watch(fd_.get(), target_dir.c_str(), kWatchMask);
  target_dir_ = target_wd_ >= 0 ? target_dir : std::string();
}

// Whether an event for the config's own name, in its directory or its target's, is a new
// regular file still being written: one created under that name that is neither a link nor
// a second name of an existing file. Its CLOSE_WRITE is the event to act on.
bool ConfigWatch::beingWritten(const std::string& dir, uint32_t mask, const char* name) const {
  if (!(mask & IN_CREATE)) return false;
  struct stat st {};
  const std::string at = dir + "/" + name;
  return lstat(at.c_str(), &st) == 0 && !S_ISLNK(st.st_mode) && st.st_nlink < 2;
}

bool ConfigWatch::drain() {
  bool ours = false, other = false;
  alignas(inotify_event) char buf[8192];
  // bounded: a directory written without pause cannot hold the daemon's loop here (what is
  // left is read at the next poll)
  for (int reads = 0; reads < kMaxReads; ++reads) {
    ssize_t n = read(fd_.get(), buf, sizeof(buf));
    if (n <= 0) break;  // EAGAIN: drained
    for (char* p = buf; p < buf + n;) {
      auto* event = reinterpret_cast<inotify_event*>(p);
      p += sizeof(inotify_event) + event->len;
      if (event->mask & IN_Q_OVERFLOW) {  // events were lost: the file's identity tells
        other = true;
        being_written_ = false;
        continue;
      }
      if (event->len == 0) continue;  // about a directory itself (IN_IGNORED)
      const bool in_dir = event->wd == dir_wd_ && name_ == event->name;
      const bool in_target = event->wd == target_wd_ && target_name_ == event->name;
      if (!in_dir && !in_target) {
        other = true;
        // a file closed: one made with O_TMPFILE and linked in under the name is whole
        if (event->mask & IN_CLOSE_WRITE) being_written_ = false;
      } else if (beingWritten(in_dir ? dir_ : target_dir_, event->mask, event->name)) {
        being_written_ = true;
      } else {
        ours = true;
        being_written_ = false;
      }
    }
  }
  // Another name changed: a link on the way to the file may now point elsewhere. The file
  // the path names is then another one, or changed; a neighbour's write leaves it as it was.
  // A path that names nothing now has nothing to reload; its return is a change. While a
  // new file is written, what was read before stays the file to compare with.
  followTarget();
  if (being_written_) return ours;
  Identity now = identify(path_);
  if (other && now != seen_ && now.size >= 0) ours = true;
  seen_ = now;
  return ours;
}

}  // namespace floodgate::daemon
