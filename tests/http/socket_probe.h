// SPDX-License-Identifier: MIT
// For the keep-alive tests: an HTTP/1.1 connection to 127.0.0.1 kept open by hand, and the
// server's end of it found among a process's open files, to read its socket options there.
#pragma once

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace floodgate::http::testing {

// A TCP connection to 127.0.0.1:`port`: its descriptor, or -1.
inline int connectToLoopback(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    close(fd);
    fd = -1;
  }
  return fd;
}

// One keep-alive connection: requests go out one at a time, each response is read whole.
class KeepAliveClient {
 public:
  explicit KeepAliveClient(int port) : fd_(connectToLoopback(port)) {}
  ~KeepAliveClient() {
    if (fd_ >= 0) close(fd_);
  }
  KeepAliveClient(const KeepAliveClient&) = delete;
  KeepAliveClient& operator=(const KeepAliveClient&) = delete;

  int fd() const { return fd_; }

  // Sends `GET path` on this connection and reads its response; the status, or 0 when the
  // connection failed, was closed or sent no response within 30 s.
  int get(const std::string& path) {
    if (fd_ < 0) return 0;
    std::string request = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    if (send(fd_, request.data(), request.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(request.size())) {
      return 0;
    }
    std::string response;
    size_t head_end;
    while ((head_end = response.find("\r\n\r\n")) == std::string::npos) {
      if (!receive(response)) return 0;
    }
    const size_t body_size = contentLength(std::string_view(response).substr(0, head_end));
    while (response.size() < head_end + 4 + body_size) {
      if (!receive(response)) return 0;
    }
    if (response.size() != head_end + 4 + body_size) return 0;  // more than one response
    if (response.compare(0, 9, "HTTP/1.1 ") != 0) return 0;
    return std::atoi(response.c_str() + 9);
  }

  // Whether the server has closed its end (an idle keep-alive connection times out).
  bool closedByServer() const {
    char byte;
    return recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
  }

 private:
  bool receive(std::string& into) {
    pollfd ready{fd_, POLLIN, 0};
    if (poll(&ready, 1, 30'000) != 1) return false;
    char buffer[4096];
    ssize_t n = recv(fd_, buffer, sizeof buffer, 0);
    if (n <= 0) return false;
    into.append(buffer, static_cast<size_t>(n));
    return true;
  }

  static size_t contentLength(std::string_view head) {
    std::string lower(head);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    size_t at = lower.find("\r\ncontent-length:");
    return at == std::string::npos ? 0 : std::strtoul(lower.c_str() + at + 17, nullptr, 10);
  }

  int fd_;
};

namespace detail {

inline bool sameAddress(const sockaddr_in& a, const sockaddr_in& b) {
  return a.sin_family == b.sin_family && a.sin_port == b.sin_port &&
         a.sin_addr.s_addr == b.sin_addr.s_addr;
}

}  // namespace detail

// TCP_NODELAY on the server's end of `client`'s connection, looked up among the sockets
// process `pid` holds open (this process, or a child: pidfd_getfd needs ptrace rights over
// it): 1 on, 0 off, -1 when no socket of `pid` is that end (the server closed it).
inline int serverTcpNodelay(pid_t pid, const KeepAliveClient& client) {
  sockaddr_in client_end{}, server_end{};
  socklen_t size = sizeof client_end;
  if (getsockname(client.fd(), reinterpret_cast<sockaddr*>(&client_end), &size) != 0) return -1;
  size = sizeof server_end;
  if (getpeername(client.fd(), reinterpret_cast<sockaddr*>(&server_end), &size) != 0) return -1;
  // the descriptors first: taking copies of them adds entries to this process's table
  std::vector<int> sockets;
  std::error_code ignored;
  for (const auto& entry :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ignored)) {
    if (std::filesystem::read_symlink(entry.path(), ignored).string().rfind("socket:", 0) == 0) {
      sockets.push_back(std::atoi(entry.path().filename().c_str()));
    }
  }
  // glibc 2.36's <sys/pidfd.h> declares its wrappers without C linkage: the system calls
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) return -1;
  int nodelay = -1;
  for (int target : sockets) {
    const int fd = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, target, 0));
    if (fd < 0) continue;
    sockaddr_in local{}, peer{};
    socklen_t local_size = sizeof local, peer_size = sizeof peer;
    int on = 0;
    socklen_t on_size = sizeof on;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_size) == 0 &&
        getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_size) == 0 &&
        detail::sameAddress(local, server_end) && detail::sameAddress(peer, client_end) &&
        getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, &on_size) == 0) {
      nodelay = on != 0 ? 1 : 0;
    }
    close(fd);
    if (nodelay >= 0) break;
  }
  close(pidfd);
  return nodelay;
}

}  // namespace floodgate::http::testing
