// SPDX-License-Identifier: MIT
// httpGetIn: setns in a fresh thread, then httplib::Client.
#include "e2e/netns_http.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sched.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <thread>

namespace floodgate::test {

HttpReply httpGetIn(const std::string& netns, int port, const std::string& target) {
  return httpGetFrom(netns, "", "127.0.0.1", port, target);
}

HttpReply httpGetFrom(const std::string& netns, const std::string& source, const std::string& host,
                      int port, const std::string& target, int timeout_s,
                      const std::vector<std::pair<std::string, std::string>>& headers) {
  HttpReply reply;
  std::thread worker([&] {
    int fd = open(netns.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    int err = setns(fd, CLONE_NEWNET);
    close(fd);
    if (err != 0) return;
    httplib::Client client(host, port);
    client.set_connection_timeout(timeout_s);
    client.set_read_timeout(timeout_s);
    // httplib calls this between socket() and connect(): the moment to pick the source
    if (!source.empty()) {
      client.set_socket_options([&](socket_t sock) {
        sockaddr_in local{};
        local.sin_family = AF_INET;
        inet_pton(AF_INET, source.c_str(), &local.sin_addr);
        bind(sock, reinterpret_cast<sockaddr*>(&local), sizeof(local));
      });
    }
    httplib::Headers sent(headers.begin(), headers.end());
    auto res = client.Get(target, sent);
    if (!res) return;
    reply.status = res->status;
    reply.body = res->body;
    reply.content_type = res->get_header_value("Content-Type");
  });
  worker.join();
  return reply;
}

std::string urlEncode(const std::string& value) {
  std::string out;
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '_' || c == '-' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof(buf), "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

}  // namespace floodgate::test
