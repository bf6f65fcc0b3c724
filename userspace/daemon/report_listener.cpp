// SPDX-License-Identifier: MIT
// The report socket: bind with credentials passing, read datagrams, parse report lines
// (floodgate/report/offender_report.h).
#include "daemon/report_listener.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace floodgate::daemon {
namespace {

std::string octalMode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof(text), "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// Whether a datagram socket is bound and open at `path` (a file left by a run that ended is
// refused: ECONNREFUSED).
bool socketAnswers(const std::string& path) {
  UniqueFd probe(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  sockaddr_un there{};
  if (!probe.valid() || path.size() >= sizeof(there.sun_path)) return false;
  there.sun_family = AF_UNIX;
  std::memcpy(there.sun_path, path.c_str(), path.size());
  return connect(probe.get(), reinterpret_cast<sockaddr*>(&there), sizeof(there)) == 0;
}

}  // namespace

Result<ReportListener> ReportListener::bind(const std::string& path, gid_t gid) {
  sockaddr_un address{};
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  // the private directory's name is longer than the socket's by at most this
  constexpr size_t kPrivateExtra = sizeof("/.reports-XXXXXX/s");
  if (path.empty() || path.size() + kPrivateExtra >= sizeof(address.sun_path)) {
    return Error::usage("report socket path '" + path + "' must be 1 to " +
                        std::to_string(sizeof(address.sun_path) - 1 - kPrivateExtra) +
                        " characters");
  }
  std::error_code ec;
  std::filesystem::create_directories(parent, ec);
  // Whoever else may write a directory on the way could swap it, or the private directory
  // below, for their own, or replace the socket afterwards and read every report. A sticky
  // directory (/tmp) lets nobody move what another made, but is no place for the socket
  // itself: another user could hold its path while floodgate is down.
  for (std::filesystem::path dir = parent;; dir = dir.parent_path()) {
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0) {
      return Error::failure("cannot use the directory " + dir.string() + " of the report socket " +
                            path + ": " + std::strerror(errno));
    }
    const bool others_write = st.st_mode & (S_IWGRP | S_IWOTH);
    if ((st.st_uid != 0 && st.st_uid != geteuid()) ||
        (others_write && (dir == parent || !(st.st_mode & S_ISVTX)))) {
      return Error::usage("the directory " + dir.string() + " of the report socket " + path +
                          " may be written by another user (owner uid " +
                          std::to_string(st.st_uid) + ", mode " + octalMode(st.st_mode) +
                          "): put http.escalate.socket in a directory only root writes, such "
                          "as /run/floodgate");
    }
    if (dir == dir.parent_path()) break;
  }
  ReportListener out;
  out.fd_ = UniqueFd(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!out.fd_.valid()) {
    return Error::failure(std::string("cannot make the report socket: ") + std::strerror(errno));
  }
  int on = 1;
  if (setsockopt(out.fd_.get(), SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) != 0) {
    return Error::failure(std::string("cannot ask for reporters' credentials: ") +
                          std::strerror(errno));
  }
  // Bound in a directory only root can enter, given its mode and group there, then renamed
  // over `path` (which also replaces a socket file an earlier run left behind).
  std::string private_dir = (parent / ".reports-XXXXXX").string();
  if (mkdtemp(private_dir.data()) == nullptr) {
    return Error::failure("cannot make a directory beside " + path + ": " + std::strerror(errno));
  }
  const std::string staged = private_dir + "/s";
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, staged.c_str(), staged.size());
  auto fail = [&](const std::string& what) {
    const std::string message = what + ": " + std::strerror(errno);
    unlink(staged.c_str());
    rmdir(private_dir.c_str());
    return Error::failure(message);
  };
  if (::bind(out.fd_.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    return fail("cannot bind the report socket " + path);
  }
  if (chown(staged.c_str(), static_cast<uid_t>(-1), gid) != 0 || chmod(staged.c_str(), 0660) != 0) {
    return fail("cannot set the owner and mode of the report socket " + path);
  }
  struct stat st {};
  if (lstat(staged.c_str(), &st) != 0) return fail("cannot read back the report socket " + path);
  out.dev_ = st.st_dev;  // a rename keeps the file's identity
  out.ino_ = st.st_ino;
  const bool exists = lstat(path.c_str(), &st) == 0;
  if (exists && !S_ISSOCK(st.st_mode)) {
    errno = EEXIST;
    return fail(path +
                " exists and is not a socket: move it away or choose another "
                "http.escalate.socket");
  }
  // A socket an earlier run left behind is replaced; one that still answers is another
  // daemon's (one per network namespace, and namespaces may share /run): taking its path
  // would leave it running without a report ever again, and nothing would say so.
  if (exists && socketAnswers(path)) {
    errno = EADDRINUSE;
    return fail(path +
                " is the report socket of another running floodgate (a daemon of another "
                "network namespace?): give each its own http.escalate.socket");
  }
  if (rename(staged.c_str(), path.c_str()) != 0) {
    return fail("cannot move the report socket to " + path);
  }
  rmdir(private_dir.c_str());
  out.path_ = path;
  return out;
}

ReportListener& ReportListener::operator=(ReportListener&& other) noexcept {
  if (this != &other) {
    removeFile();
    fd_ = std::move(other.fd_);
    path_ = std::move(other.path_);
    other.path_.clear();
    dev_ = other.dev_;
    ino_ = other.ino_;
  }
  return *this;
}

ReportListener::~ReportListener() { removeFile(); }

void ReportListener::removeFile() {
  struct stat st {};
  if (!path_.empty() && fd_.valid() && lstat(path_.c_str(), &st) == 0 && st.st_dev == dev_ &&
      st.st_ino == ino_) {
    unlink(path_.c_str());
  }
  path_.clear();
}

std::vector<ReceivedReport> ReportListener::drain(size_t max) {
  std::vector<ReceivedReport> out;
  while (out.size() < max) {
    char buffer[512];
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
    iovec io{buffer, sizeof(buffer)};
    msghdr message{};
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    ssize_t n = recvmsg(fd_.get(), &message, MSG_DONTWAIT);
    if (n < 0) break;  // EAGAIN: nothing more waits
    ReceivedReport received;
    ucred credentials{0, static_cast<uid_t>(-1), static_cast<gid_t>(-1)};
    for (cmsghdr* c = CMSG_FIRSTHDR(&message); c; c = CMSG_NXTHDR(&message, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
        std::memcpy(&credentials, CMSG_DATA(c), sizeof(credentials));
      }
    }
    received.sender =
        "pid " + std::to_string(credentials.pid) + " uid " + std::to_string(credentials.uid);
    received.reporter = "uid " + std::to_string(credentials.uid);
    received.over_socket = true;
    received.uid = credentials.uid;
    received.gid = credentials.gid;
    received.report = (message.msg_flags & MSG_TRUNC)
                          ? Result<OffenderReport>(Error::usage("a report longer than 512 bytes"))
                          : parseReport(std::string_view(buffer, static_cast<size_t>(n)));
    out.push_back(std::move(received));
  }
  return out;
}

}  // namespace floodgate::daemon
