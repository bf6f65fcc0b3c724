// SPDX-License-Identifier: MIT
// replaceFile: a walk of the path without links, a new file beside the old, a rename.
#include "floodgate/common/write_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <utility>

#include "kernel/unique_fd.h"

namespace floodgate {
namespace {

// Whether the link `name` of `dir` is one only root could have made: root owns it, and the
// directory it is in, which no one else may write (as /var/run, pointing to /run).
bool madeByRoot(int dir, const std::string& name) {
  struct stat link {};
  struct stat in {};
  return fstatat(dir, name.c_str(), &link, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(link.st_mode) &&
         link.st_uid == 0 && fstat(dir, &in) == 0 && in.st_uid == 0 &&
         (in.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

// The directory of `path`'s last component, opened one directory at a time following only
// links root made (madeByRoot); `name` gets the last component.
Result<UniqueFd> openParentWithoutLinks(const std::string& path, bool make, std::string& name) {
  UniqueFd dir(open(path[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) return Error::failure(std::strerror(errno));
  size_t start = 0;
  for (;;) {
    start = path.find_first_not_of('/', start);
    const size_t end = path.find('/', start);
    if (end == std::string::npos) break;
    const std::string component = path.substr(start, end - start);
    auto openNext = [&] {
      return UniqueFd(
          openat(dir.get(), component.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    };
    UniqueFd next = openNext();
    if (!next.valid() && errno == ENOENT && make &&
        (mkdirat(dir.get(), component.c_str(), 0755) == 0 || errno == EEXIST)) {
      next = openNext();
    }
    int error = next.valid() ? 0 : errno;
    const bool trusted = !next.valid() && madeByRoot(dir.get(), component);
    if (trusted) {
      next = UniqueFd(openat(dir.get(), component.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
      error = errno;
    }
    if (!next.valid()) {
      const std::string walked = "'" + path.substr(0, end) + "'";
      char target[256];
      const ssize_t n =
          trusted ? -1 : readlinkat(dir.get(), component.c_str(), target, sizeof(target) - 1);
      if (n >= 0) {
        return Error::failure(
            walked + " is a symbolic link (to '" + std::string(target, n) +
            "'); give a path with no link in it (written as root, a link is followed only "
            "where root made it, in a directory only root writes)");
      }
      return Error::failure(walked + ": " + std::strerror(error));
    }
    dir = std::move(next);
    start = end;
  }
  name = path.substr(start);
  return dir;
}

// A file of `dir` under a name none has, for the text before it is renamed into place.
Result<std::pair<UniqueFd, std::string>> createTemporary(int dir, const std::string& name) {
  std::random_device random;
  for (int attempt = 0; attempt < 16; ++attempt) {
    // a dot name, so a glob or a watcher of the name does not pick it up half written
    const std::string temporary =
        "." + name + "." + std::to_string(getpid()) + "." + std::to_string(random());
    UniqueFd fd(
        openat(dir, temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (fd.valid()) return std::make_pair(std::move(fd), temporary);
    if (errno != EEXIST) break;
  }
  return Error::failure(std::string("cannot create a file beside it: ") + std::strerror(errno));
}

}  // namespace

Status replaceFile(const std::string& path, const std::string& text,
                   const ReplaceFileOptions& options) {
  if (path.empty() || path.back() == '/') {
    return Error::failure("it names a directory; give the path of a file");
  }
  std::string name;
  auto dir = openParentWithoutLinks(path, options.make_directories, name);
  if (!dir) return dir.error();
  if (name == "." || name == "..") {
    return Error::failure("it names a directory; give the path of a file");
  }
  struct stat st {};
  if (fstatat(dir->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISLNK(st.st_mode)) {
      return Error::failure("it is a symbolic link; give the path of a file itself");
    }
    if (!S_ISREG(st.st_mode)) {
      return Error::failure("it is not a regular file; give the path of a file");
    }
  } else if (errno != ENOENT) {
    return Error::failure(std::strerror(errno));
  }
  auto temporary = createTemporary(dir->get(), name);
  if (!temporary) return temporary.error();
  const UniqueFd fd = std::move(temporary->first);
  const std::string& temporary_name = temporary->second;
  auto discard = [&](const char* step) {
    const Status s = Error::failure(std::string("cannot ") + step +
                                    " a file beside it: " + std::strerror(errno));
    unlinkat(dir->get(), temporary_name.c_str(), 0);
    return s;
  };
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return discard("write");
    done += static_cast<size_t>(n);
  }
  if (fchmod(fd.get(), 0644) != 0) return discard("chmod");
  if (fsync(fd.get()) != 0) return discard("fsync");
  // a rename replaces the name itself, never what a link planted there since points to
  if (renameat(dir->get(), temporary_name.c_str(), dir->get(), name.c_str()) != 0) {
    return discard("rename");
  }
  // the rename itself is durable only once the directory is (an O_PATH descriptor cannot
  // be synced: the directory opened again through it)
  const UniqueFd synced(openat(dir->get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (synced.valid()) fsync(synced.get());
  return okStatus();
}

}  // namespace floodgate
