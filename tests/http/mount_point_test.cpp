// SPDX-License-Identifier: MIT
// A path policy limits every spelling of a path that a real cpp-httplib server on 127.0.0.1
// resolves to it: from its mount point in normal form ("//downloads/x" is /downloads/x), and
// through its router as sent ("/search/.." runs a "/search/(.*)" route).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "floodgate/adapters/httplib_adapter.h"
#include "floodgate/core/config_parser.h"

namespace floodgate::http {
namespace {

// Each client (127.0.0.1) may fetch under /downloads twice an hour, and search twice, by a
// clock the test holds still; nothing else is limited.
constexpr const char* kDownloads = R"(http:
  retry_after_jitter: 0
  policies:
    - name: downloads
      match: {path_prefix: /downloads}
      key: ip
      algorithm: fixed_window
      limit: 2
      window_ms: 3600000
    - name: search
      match: {path_prefix: /search}
      key: ip
      algorithm: fixed_window
      limit: 2
      window_ms: 3600000
)";

// A directory served at "/", holding downloads/x and an empty directory x, removed with it.
class ServedFiles {
 public:
  ServedFiles() {
    char name[] = "/tmp/floodgate-mount-XXXXXX";
    root_ = mkdtemp(name);
    std::filesystem::create_directories(root_ / "downloads");
    std::filesystem::create_directories(root_ / "x");  // for "/x/../downloads/x" to resolve
    std::ofstream(root_ / "downloads" / "x") << "the file";
  }
  ~ServedFiles() { std::filesystem::remove_all(root_); }
  std::string root() const { return root_.string(); }

 private:
  std::filesystem::path root_;
};

// A cpp-httplib server with files mounted at "/", a "/search/(.*)" route, and the limiter
// installed.
class Service {
 public:
  Service() {
    auto config = parseHttpConfigText(kDownloads, "test.yaml");
    EXPECT_TRUE(config.ok()) << config.error().message;
    auto made = Limiter::create(std::move(*config), std::make_shared<ManualClock>(1'000'000));
    EXPECT_TRUE(made.ok());
    EXPECT_TRUE(server_.set_mount_point("/", files_.root()));
    server_.Get(R"(/search/(.*))", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("results", "text/plain");
    });
    installRateLimiter(server_, std::move(*made));
    port_ = server_.bind_to_any_port("127.0.0.1");
    EXPECT_GT(port_, 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~Service() {
    server_.stop();
    thread_.join();
  }

  // The answer to "GET `target`" sent as it is (a client library would clean the target
  // up): the whole response, empty if none came.
  std::string get(const std::string& target) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port_));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    std::string response;
    if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) {
      const std::string request =
          "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
      if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size())) {
        char buf[4096];
        ssize_t n;
        while ((n = recv(fd, buf, sizeof buf, 0)) > 0) response.append(buf, static_cast<size_t>(n));
      }
    }
    close(fd);
    return response;
  }

 private:
  ServedFiles files_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

// The status of `response` ("HTTP/1.1 200 OK"), 0 if it has none.
int statusOf(const std::string& response) {
  return response.size() > 12 ? std::atoi(response.substr(9, 3).c_str()) : 0;
}

// Each spelling is served the file, under the policy's quota: the third fetch is refused.
TEST(MountPoint, EverySpellingOfAMountedPathMeetsItsPolicy) {
  for (const std::string target : {"//downloads/x", "/./downloads/x", "/x/../downloads/x"}) {
    Service service;
    for (int i = 0; i < 2; ++i) {
      const std::string served = service.get(target);
      EXPECT_EQ(statusOf(served), 200) << target << " " << i;
      EXPECT_TRUE(served.ends_with("\r\n\r\nthe file")) << target << " " << i;
      EXPECT_NE(served.find("RateLimit: \"downloads\";r=" + std::to_string(1 - i)),
                std::string::npos)
          << target << " is served without the /downloads policy";
    }
    EXPECT_EQ(statusOf(service.get(target)), 429) << target << " fetched past its quota";
  }
}

// The spellings share one quota with the path itself, and a path elsewhere is not limited.
TEST(MountPoint, SpellingsOfOnePathShareItsQuota) {
  Service service;
  EXPECT_EQ(statusOf(service.get("/downloads/x")), 200);
  EXPECT_EQ(statusOf(service.get("//downloads/x")), 200);
  EXPECT_EQ(statusOf(service.get("/./downloads/x")), 429);
  // under /downloads as sent: a route matched as sent could run it, so it is limited too
  EXPECT_EQ(statusOf(service.get("/downloads/../x/")), 429);
  // under /downloads in neither spelling: not limited (no index.html there)
  EXPECT_EQ(statusOf(service.get("/y/../x/")), 404);
  EXPECT_EQ(statusOf(service.get("/y/../x/")), 404);
}

// cpp-httplib's router matches a route's pattern against the path as sent: "/search/.." runs
// the "/search/(.*)" handler though its normal form is "/". The /search policy holds it.
TEST(MountPoint, ARouteMatchedAsSentMeetsItsPolicy) {
  Service service;
  const std::string first = service.get("/search/..");
  ASSERT_EQ(statusOf(first), 200) << first;
  EXPECT_NE(first.find("results"), std::string::npos) << "the route's handler ran:\n" << first;
  EXPECT_EQ(statusOf(service.get("/search/a/../..")), 200);
  EXPECT_EQ(statusOf(service.get("/search/..")), 429) << "the third search is refused";
}

}  // namespace
}  // namespace floodgate::http
