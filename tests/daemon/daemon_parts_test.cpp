// SPDX-License-Identifier: MIT
// --metrics-listen parsing, inotify seeing in-place writes and renames over the config (and
// ignoring its neighbours), and configs the daemon refuses before it changes anything.
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "daemon/config_watch.h"
#include "daemon/daemon_state.h"
#include "daemon/listen_address.h"
#include "floodgate/common/text.h"

namespace floodgate::daemon {
namespace {

TEST(ListenAddress, TakesHostAndPortAndBracketedIpv6) {
  auto v4 = parseListenAddress("0.0.0.0:9100");
  ASSERT_TRUE(v4.ok());
  EXPECT_EQ(v4->host, "0.0.0.0");
  EXPECT_EQ(v4->port, 9100);
  auto v6 = parseListenAddress("[::1]:9477");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 9477);
}

TEST(ListenAddress, RejectsWhatIsNotAddrPortAsAUsageError) {
  for (const char* bad :
       {"9477", ":9477", "127.0.0.1:", "127.0.0.1:99999", "127.0.0.1:9x", "[::1:9477"}) {
    auto r = parseListenAddress(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().kind, ErrorKind::kUsage);
    EXPECT_NE(r.error().message.find("ADDR:PORT"), std::string::npos);
  }
}

class ConfigWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/fg-watch-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    std::ofstream(dir_ + "/floodgate.yaml") << "rules: []\n";
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }

  // Waits briefly for events, then drains them.
  static bool changed(ConfigWatch& watch) {
    pollfd fd{watch.fd(), POLLIN, 0};
    if (poll(&fd, 1, 200) <= 0) return false;
    return watch.drain();
  }

  std::string dir_;
};

TEST_F(ConfigWatchTest, SeesInPlaceWritesAndRenamesOverButNotOtherFiles) {
  auto watch = ConfigWatch::start(dir_ + "/floodgate.yaml");
  ASSERT_TRUE(watch.ok()) << watch.error().message;
  EXPECT_FALSE(changed(*watch));

  std::ofstream(dir_ + "/floodgate.yaml") << "rules: [] # edited\n";
  EXPECT_TRUE(changed(*watch));

  std::ofstream(dir_ + "/.floodgate.yaml.swp") << "x";
  EXPECT_FALSE(changed(*watch)) << "a neighbour's change is not the config's";

  std::ofstream(dir_ + "/new") << "rules: []\n";
  EXPECT_FALSE(changed(*watch));
  ASSERT_EQ(std::rename((dir_ + "/new").c_str(), (dir_ + "/floodgate.yaml").c_str()), 0);
  EXPECT_TRUE(changed(*watch)) << "an editor's rename over the file";
}

TEST_F(ConfigWatchTest, AMissingDirectoryIsOneClearError) {
  auto watch = ConfigWatch::start(dir_ + "/nowhere/floodgate.yaml");
  ASSERT_FALSE(watch.ok());
  EXPECT_NE(watch.error().message.find("cannot watch"), std::string::npos);
}

TEST_F(ConfigWatchTest, TheDaemonRefusesAnInvalidConfigOrOneWithoutInterfaces) {
  DaemonState invalid(dir_ + "/missing.yaml");
  Status s = invalid.apply(true);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("is not valid"), std::string::npos) << s.error().message;

  DaemonState no_interfaces(dir_ + "/floodgate.yaml");
  s = no_interfaces.apply(true);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("lists no interfaces"), std::string::npos) << s.error().message;
  EXPECT_FALSE(no_interfaces.healthy());
  std::string text = no_interfaces.scrape();
  EXPECT_NE(text.find("floodgate_config_generation 0\n"), std::string::npos) << text;
}

TEST_F(ConfigWatchTest, OneProblemIsCountedInTheSingular) {
  std::ofstream(dir_ + "/floodgate.yaml") << "interfaces: [{name: eth0}]\nbogus: 1\n";
  DaemonState one(dir_ + "/floodgate.yaml");
  Status s = one.apply(true);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("is not valid (1 problem)"), std::string::npos)
      << s.error().message;
  EXPECT_EQ(counted(2, "problem", "problems"), "2 problems");
  EXPECT_EQ(counted(0, "problem", "problems"), "0 problems");
}

}  // namespace
}  // namespace floodgate::daemon
