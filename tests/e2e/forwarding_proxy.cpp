// SPDX-License-Identifier: MIT
// A reverse proxy as nginx and HAProxy are set up by default: it forwards every GET to one
// upstream and appends the peer it saw to X-Forwarded-For, passing on every other header
// (Forwarded and X-Real-IP too) exactly as the client sent it. The escalation test puts it
// in front of the example service to show a client's forged headers choose nothing.
// Usage: floodgate-test-proxy LISTEN_HOST LISTEN_PORT UPSTREAM_HOST UPSTREAM_PORT
#include <httplib.h>
#include <strings.h>

#include <cstdio>
#include <string>

namespace {

bool sameName(const std::string& a, const char* b) { return strcasecmp(a.c_str(), b) == 0; }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s LISTEN_HOST LISTEN_PORT UPSTREAM_HOST UPSTREAM_PORT\n",
                 argv[0]);
    return 2;
  }
  const std::string upstream_host = argv[3];
  const int upstream_port = std::stoi(argv[4]);
  httplib::Server server;
  server.Get(".*", [&](const httplib::Request& req, httplib::Response& res) {
    httplib::Headers headers;
    std::string forwarded_for;
    for (const auto& [name, value] : req.headers) {
      if (sameName(name, "X-Forwarded-For")) {
        forwarded_for += (forwarded_for.empty() ? "" : ", ") + value;
      } else if (!sameName(name, "Host") && !sameName(name, "Connection") &&
                 !sameName(name, "REMOTE_ADDR") && !sameName(name, "REMOTE_PORT")) {
        headers.emplace(name, value);
      }
    }
    forwarded_for += (forwarded_for.empty() ? "" : ", ") + req.remote_addr;
    headers.emplace("X-Forwarded-For", forwarded_for);
    httplib::Client upstream(upstream_host, upstream_port);
    upstream.set_connection_timeout(2);
    upstream.set_read_timeout(2);
    auto reply = upstream.Get(req.target, headers);
    if (!reply) {
      res.status = 502;
      return;
    }
    res.status = reply->status;
    for (const auto& [name, value] : reply->headers) {
      if (name == "Content-Length" || name == "Content-Type") continue;
      res.set_header(name, value);
    }
    res.set_content(reply->body, reply->get_header_value("Content-Type"));
  });
  std::printf("forwarding %s:%s to %s:%d\n", argv[1], argv[2], upstream_host.c_str(),
              upstream_port);
  std::fflush(stdout);
  return server.listen(argv[1], std::stoi(argv[2])) ? 0 : 1;
}
