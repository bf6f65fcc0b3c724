// SPDX-License-Identifier: MIT
// --metrics-listen parsing, inotify seeing in-place writes and renames over the config, its
// symlink's target and ConfigMap updates (and ignoring its neighbours), and configs the daemon
// refuses before it changes anything.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
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

  // The file `name` in `dir` written in place, then a neighbour written, then a new file
  // renamed over it (an editor's save): the first and the last are changes of the config.
  static void editsAreSeen(ConfigWatch& watch, const std::string& dir, const std::string& name) {
    std::ofstream(dir + "/" + name) << "rules: [] # edited\n";
    EXPECT_TRUE(changed(watch)) << name << " written in place";
    std::ofstream(dir + "/." + name + ".swp") << "x";
    EXPECT_FALSE(changed(watch)) << "a neighbour's change is not the config's";
    std::ofstream(dir + "/new") << "rules: []\n";
    EXPECT_FALSE(changed(watch));
    ASSERT_EQ(std::rename((dir + "/new").c_str(), (dir + "/" + name).c_str()), 0);
    EXPECT_TRUE(changed(watch)) << "an editor's rename over " << name;
  }

  std::string dir_;
};

TEST_F(ConfigWatchTest, SeesInPlaceWritesAndRenamesOverButNotOtherFiles) {
  auto watch = ConfigWatch::start(dir_ + "/floodgate.yaml");
  ASSERT_TRUE(watch.ok()) << watch.error().message;
  EXPECT_FALSE(changed(*watch));

  editsAreSeen(*watch, dir_, "floodgate.yaml");
}

// A file made anew under the config's name is read when its writer closes it: read at its
// creation it could be a valid prefix of the config, with only some of its rules.
TEST_F(ConfigWatchTest, AFileCreatedUnderTheNameIsSeenOnceClosed) {
  ASSERT_EQ(unlink((dir_ + "/floodgate.yaml").c_str()), 0);
  auto watch = ConfigWatch::start(dir_ + "/floodgate.yaml");
  ASSERT_TRUE(watch.ok()) << watch.error().message;
  int fd = open((dir_ + "/floodgate.yaml").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "rules: []\n", 10), 10);
  EXPECT_FALSE(changed(*watch)) << "still being written";
  close(fd);
  EXPECT_TRUE(changed(*watch));
  ASSERT_EQ(link((dir_ + "/floodgate.yaml").c_str(), (dir_ + "/second").c_str()), 0);
  ASSERT_EQ(unlink((dir_ + "/floodgate.yaml").c_str()), 0);
  EXPECT_FALSE(changed(*watch));
  ASSERT_EQ(link((dir_ + "/second").c_str(), (dir_ + "/floodgate.yaml").c_str()), 0);
  EXPECT_TRUE(changed(*watch)) << "a second name of a whole file";

  // written unnamed (O_TMPFILE), then linked in whole under the name: its creation has one
  // link, as a file still being written has, and the close that follows says it is whole
  ASSERT_EQ(unlink((dir_ + "/floodgate.yaml").c_str()), 0);
  EXPECT_FALSE(changed(*watch)) << "a config gone has nothing to reload";
  fd = open(dir_.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0) << strerror(errno);
  ASSERT_EQ(write(fd, "rules: [] # tmp\n", 16), 16);
  const std::string proc = "/proc/self/fd/" + std::to_string(fd);
  ASSERT_EQ(linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, (dir_ + "/floodgate.yaml").c_str(),
                   AT_SYMLINK_FOLLOW),
            0)
      << strerror(errno);
  close(fd);
  EXPECT_TRUE(changed(*watch)) << "an O_TMPFILE linked in";
}

// A config that is a link to a file elsewhere: edits of the target, renames over it and the
// link pointed at another file are all changes of the config.
TEST_F(ConfigWatchTest, SeesTheTargetOfASymlinkedConfigChange) {
  const std::string conf = dir_ + "/conf";
  ASSERT_EQ(mkdir(conf.c_str(), 0755), 0);
  std::ofstream(conf + "/real.yaml") << "rules: []\n";
  std::ofstream(conf + "/other.yaml") << "rules: [] # other\n";
  ASSERT_EQ(unlink((dir_ + "/floodgate.yaml").c_str()), 0);
  ASSERT_EQ(symlink("conf/real.yaml", (dir_ + "/floodgate.yaml").c_str()), 0);
  auto watch = ConfigWatch::start(dir_ + "/floodgate.yaml");
  ASSERT_TRUE(watch.ok()) << watch.error().message;

  editsAreSeen(*watch, conf, "real.yaml");

  ASSERT_EQ(symlink("conf/other.yaml", (dir_ + "/link.tmp").c_str()), 0);
  ASSERT_EQ(std::rename((dir_ + "/link.tmp").c_str(), (dir_ + "/floodgate.yaml").c_str()), 0);
  EXPECT_TRUE(changed(*watch)) << "the link pointed at another file";
  std::ofstream(conf + "/other.yaml") << "rules: [] # edited\n";
  EXPECT_TRUE(changed(*watch)) << "the new target written in place";
}

// A Kubernetes ConfigMap volume: the config is a link through `..data`, a link to a
// timestamped directory that an update replaces (a new directory, `..data` renamed over).
TEST_F(ConfigWatchTest, SeesAConfigMapUpdate) {
  auto version = [&](const std::string& name, const std::string& text) {
    ASSERT_EQ(mkdir((dir_ + "/" + name).c_str(), 0755), 0);
    std::ofstream(dir_ + "/" + name + "/floodgate.yaml") << text;
    ASSERT_EQ(symlink(name.c_str(), (dir_ + "/..data_tmp").c_str()), 0);
    ASSERT_EQ(std::rename((dir_ + "/..data_tmp").c_str(), (dir_ + "/..data").c_str()), 0);
  };
  ASSERT_EQ(unlink((dir_ + "/floodgate.yaml").c_str()), 0);
  version("..2026_12_05_10_00_00.1", "rules: []\n");
  ASSERT_EQ(symlink("..data/floodgate.yaml", (dir_ + "/floodgate.yaml").c_str()), 0);
  auto watch = ConfigWatch::start(dir_ + "/floodgate.yaml");
  ASSERT_TRUE(watch.ok()) << watch.error().message;
  EXPECT_FALSE(changed(*watch));

  version("..2026_12_05_10_01_00.2", "rules: [] # second\n");
  EXPECT_TRUE(changed(*watch)) << "the first update";
  std::system(("rm -rf '" + dir_ + "/..2026_12_05_10_00_00.1'").c_str());
  EXPECT_FALSE(changed(*watch)) << "the old version removed";
  version("..2026_12_05_10_02_00.3", "rules: [] # third\n");
  EXPECT_TRUE(changed(*watch)) << "the next update";
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
