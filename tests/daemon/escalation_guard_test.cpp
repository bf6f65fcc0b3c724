// SPDX-License-Identifier: MIT
// What stands between an offender report and a ban: the addresses never banned, the
// reporters allowed, the quota per reporter, and the socket's mode and group from birth.
#include "daemon/escalation_guard.h"

#include <grp.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>

#include "common/cidr_literal.h"
#include "floodgate/report/offender_report.h"
#include "kernel/unique_fd.h"

namespace floodgate::daemon {
namespace {

using test::cidr;

OffenderReport report(const char* address, int64_t rejections = 50, int64_t within_ms = 10000) {
  return OffenderReport{cidr(address), rejections, within_ms};
}

EscalationRules rules() {
  EscalationRules r;
  r.allow = {cidr("192.0.2.0/24")};
  r.trusted_proxies = {cidr("10.0.0.0/8"), cidr("2001:db8:ffff::/48")};
  r.services = {cidr("198.51.100.200"), cidr("2001:db8:5:5::6")};
  r.rejections = 50;
  r.within_ms = 10000;
  r.ipv6_prefix = 64;
  return r;
}

TEST(EscalationGuard, AnOrdinaryClientIsBanned) {
  const std::vector<Cidr> own = {cidr("203.0.113.1"), cidr("2001:db8:1::1")};
  EXPECT_EQ(refusalFor(report("198.51.100.7"), rules(), own), Refusal::kNone);
  EXPECT_EQ(refusalFor(report("2001:db8:2:3::/64"), rules(), own), Refusal::kNone);
  EXPECT_EQ(refusalFor(report("2001:db8:2:3::9"), rules(), own), Refusal::kNone);
}

TEST(EscalationGuard, AddressesThatMustNeverBeBannedAreRefusedByReason) {
  const std::vector<Cidr> own = {cidr("203.0.113.1"), cidr("2001:db8:1::1")};
  EXPECT_EQ(refusalFor(report("127.0.0.1"), rules(), own), Refusal::kLoopback);
  EXPECT_EQ(refusalFor(report("127.9.9.9"), rules(), own), Refusal::kLoopback);
  EXPECT_EQ(refusalFor(report("::1"), rules(), own), Refusal::kLoopback);
  EXPECT_EQ(refusalFor(report("0.0.0.0"), rules(), own), Refusal::kUnspecified);
  EXPECT_EQ(refusalFor(report("::"), rules(), own), Refusal::kUnspecified);
  EXPECT_EQ(refusalFor(report("::/64"), rules(), own), Refusal::kLoopback);  // holds ::1
  EXPECT_EQ(refusalFor(report("169.254.1.1"), rules(), own), Refusal::kLinkLocal);
  EXPECT_EQ(refusalFor(report("fe80::/64"), rules(), own), Refusal::kLinkLocal);
  EXPECT_EQ(refusalFor(report("224.0.0.1"), rules(), own), Refusal::kMulticast);
  EXPECT_EQ(refusalFor(report("255.255.255.255"), rules(), own), Refusal::kMulticast);
  EXPECT_EQ(refusalFor(report("ff02::1"), rules(), own), Refusal::kMulticast);
  EXPECT_EQ(refusalFor(report("203.0.113.1"), rules(), own), Refusal::kOwnAddress);
  // a prefix holding one of the host's addresses would ban the host
  EXPECT_EQ(refusalFor(report("2001:db8:1::/64"), rules(), own), Refusal::kOwnAddress);
  EXPECT_EQ(refusalFor(report("10.1.2.3"), rules(), own), Refusal::kTrustedProxy);
  EXPECT_EQ(refusalFor(report("2001:db8:ffff:1::/64"), rules(), own), Refusal::kTrustedProxy);
  EXPECT_EQ(refusalFor(report("192.0.2.77"), rules(), own), Refusal::kAllowListed);
  // the config's Redis servers: a report naming one would cut the fleet off its limits
  EXPECT_EQ(refusalFor(report("198.51.100.200"), rules(), own), Refusal::kService);
  EXPECT_EQ(refusalFor(report("2001:db8:5:5::/64"), rules(), own), Refusal::kService);
}

// An IPv4-mapped address is judged as the IPv4 one it names: ::ffff:127.0.0.1 is loopback,
// not an IPv6 host no guard covers.
TEST(EscalationGuard, AnIpv4MappedReportMeetsTheIpv4Guards) {
  const std::vector<Cidr> own = {cidr("203.0.113.1")};
  auto judged = [&](const char* address) {
    auto parsed =
        parseReport(std::string("offender ") + address + " rejections=50 within_ms=10000");
    EXPECT_TRUE(parsed.ok()) << address;
    return refusalFor(*parsed, rules(), own);
  };
  EXPECT_EQ(judged("::ffff:127.0.0.1"), Refusal::kLoopback);
  EXPECT_EQ(judged("::ffff:203.0.113.1"), Refusal::kOwnAddress);
  EXPECT_EQ(judged("::ffff:10.1.2.3"), Refusal::kTrustedProxy);
  EXPECT_EQ(judged("::ffff:192.0.2.77"), Refusal::kAllowListed);
  EXPECT_EQ(judged("::ffff:198.51.100.0/120"), Refusal::kTooWide);
  EXPECT_EQ(judged("::ffff:198.51.100.7"), Refusal::kNone);
}

TEST(EscalationGuard, AReportMayNotNameMoreThanOneClientNorClaimLess) {
  EXPECT_EQ(refusalFor(report("198.51.100.0/24"), rules(), {}), Refusal::kTooWide);
  EXPECT_EQ(refusalFor(report("2001:db8::/32"), rules(), {}), Refusal::kTooWide);
  EXPECT_EQ(refusalFor(report("2001:db8:5::/48"), rules(), {}), Refusal::kTooWide);
  // NAT64: each address one IPv4 client behind the translator, its /64 all of them
  EXPECT_EQ(refusalFor(report("64:ff9b::/64"), rules(), {}), Refusal::kTooWide);
  EXPECT_EQ(refusalFor(report("64:ff9b::/96"), rules(), {}), Refusal::kTooWide);
  EXPECT_EQ(refusalFor(report("64:ff9b::c633:6400/120"), rules(), {}), Refusal::kTooWide);
  EXPECT_EQ(refusalFor(report("64:ff9b::c633:6407", 500, 1000), rules(), {}), Refusal::kNone);
  EXPECT_EQ(refusalFor(report("198.51.100.7", 49), rules(), {}), Refusal::kBelowThreshold);
  EXPECT_EQ(refusalFor(report("198.51.100.7", 50, 10001), rules(), {}), Refusal::kBelowThreshold);
  EXPECT_EQ(refusalFor(report("198.51.100.7", 500, 1000), rules(), {}), Refusal::kNone);
}

// A store's servers by address, by name as they resolve now, and no Unix socket.
TEST(EscalationGuard, AStoresServersAreListedByAddressAndByName) {
  http::StoreConfig store;
  store.type = "redis";
  store.address = "198.51.100.200:6379";
  store.cluster = {"[2001:db8:5:5::6]:7000", "unix:/run/redis.sock", "localhost:7001",
                   "[::ffff:198.51.100.201]:7002"};
  const std::vector<Cidr> servers = storeServerAddresses(store);
  auto holds = [&](const char* text) {
    return std::find(servers.begin(), servers.end(), cidr(text)) != servers.end();
  };
  EXPECT_TRUE(holds("198.51.100.200"));
  EXPECT_TRUE(holds("2001:db8:5:5::6"));
  EXPECT_TRUE(holds("127.0.0.1") || holds("::1")) << "localhost resolves to loopback";
  // an IPv4-mapped address is the IPv4 one, as a report naming it is read
  EXPECT_TRUE(holds("198.51.100.201"));
  store.type = "memory";
  EXPECT_TRUE(storeServerAddresses(store).empty());
}

TEST(EscalationGuard, TheHostsOwnAddressesAreListed) {
  auto own = hostAddresses();
  ASSERT_TRUE(own.ok()) << own.error().message;
  EXPECT_NE(std::find(own->begin(), own->end(), cidr("127.0.0.1")), own->end());
}

// The network whose clients share a quota of bans: never wider than the client itself.
TEST(EscalationGuard, AClientsNetworkIsItsIpv4Slash24OrIpv6Slash48) {
  EXPECT_EQ(reportNetwork(cidr("198.51.100.7")), cidr("198.51.100.0/24"));
  EXPECT_EQ(reportNetwork(cidr("2001:db8:1:2::/64")), cidr("2001:db8:1::/48"));
  EXPECT_EQ(reportNetwork(cidr("2001:db8:1:2::5")), cidr("2001:db8:1::/48"));
  EXPECT_EQ(reportNetwork(cidr("2001:db8::/40")), cidr("2001:db8::/40")) << "a wider client";
  EXPECT_EQ(reportNetwork(cidr("64:ff9b::198.51.100.7")), cidr("64:ff9b::198.51.100.0/120"))
      << "a NAT64 address is an IPv4 client";
}

TEST(BanQuota, EachReporterGetsItsOwnMinute) {
  BanQuota quota;
  const auto t0 = BanQuota::Clock::time_point{} + std::chrono::hours(1);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(quota.take("uid 33", 3, t0));
  EXPECT_FALSE(quota.take("uid 33", 3, t0 + std::chrono::seconds(59)));
  EXPECT_TRUE(quota.take("uid 34", 3, t0));  // another reporter is not held back
  EXPECT_TRUE(quota.take("uid 33", 3, t0 + std::chrono::seconds(60)));
}

TEST(BanQuota, ManyReportersCannotGrowItWithoutBound) {
  BanQuota quota;
  const auto t0 = BanQuota::Clock::time_point{} + std::chrono::hours(1);
  for (size_t i = 0; i < BanQuota::kMaxReporters; ++i) {
    ASSERT_TRUE(quota.take("host:" + std::to_string(i), 1, t0));
  }
  // full: the reporter whose minute began first makes room; nobody is locked out
  EXPECT_TRUE(quota.take("one-more", 1, t0 + std::chrono::seconds(1)));
  EXPECT_FALSE(quota.take("one-more", 1, t0 + std::chrono::seconds(2)));
}

TEST(ReporterAccess, RootAlwaysListedUsersAndGroupMembersOnly) {
  ReporterAccess nobody_listed;
  EXPECT_TRUE(nobody_listed.allows(0, 0));
  EXPECT_FALSE(nobody_listed.allows(65534, 65534));
  ReporterAccess users;
  users.users = {65534};
  EXPECT_TRUE(users.allows(65534, 12345));
  ReporterAccess groups;
  groups.groups = {65534};
  EXPECT_TRUE(groups.allows(4242, 65534));  // by the datagram's primary group
  EXPECT_FALSE(groups.allows(4242, 4242));  // no passwd entry: no other groups
}

// A sender's supplementary groups are read from the user database once per user every
// 10 s, not for each datagram: a reporter flooding the socket makes no lookup per report.
TEST(ReporterAccess, GroupsAreLookedUpOncePerUserEveryTenSeconds) {
  std::map<uid_t, int> lookups;
  GroupMemberships memberships([&](uid_t uid) {
    ++lookups[uid];
    return std::vector<gid_t>{static_cast<gid_t>(uid + 1)};
  });
  const auto t0 = GroupMemberships::Clock::time_point{} + std::chrono::hours(1);
  for (int i = 0; i < 1000; ++i) {
    EXPECT_EQ(memberships.of(33, t0 + std::chrono::milliseconds(i)), std::vector<gid_t>{34});
  }
  EXPECT_EQ(lookups[33], 1);
  memberships.of(33, t0 + GroupMemberships::kFreshFor);
  EXPECT_EQ(lookups[33], 2) << "a membership changed since is seen within 10 s";
  // bounded: as many users as it keeps, and one more, which forgets the one read first
  for (uid_t uid = 1000; uid < 1000 + GroupMemberships::kMaxUsers; ++uid) {
    memberships.of(uid, t0 + GroupMemberships::kFreshFor + std::chrono::seconds(1));
  }
  memberships.of(33, t0 + GroupMemberships::kFreshFor + std::chrono::seconds(2));
  EXPECT_EQ(lookups[33], 3) << "33, read first, was forgotten";
  memberships.of(1001, t0 + GroupMemberships::kFreshFor + std::chrono::seconds(2));
  EXPECT_EQ(lookups[1001], 1) << "1001 is still kept";

  ReporterAccess access;
  access.groups = {34};
  access.memberships = std::make_shared<GroupMemberships>([&](uid_t uid) {
    ++lookups[uid];
    return std::vector<gid_t>{static_cast<gid_t>(uid + 1)};
  });
  EXPECT_TRUE(access.allows(33, 33)) << "a member by a supplementary group";
  EXPECT_TRUE(access.allows(33, 33));
  EXPECT_FALSE(access.allows(40, 40));
  EXPECT_EQ(lookups[33], 4);

  // a lookup that found nothing (a directory that timed out) is asked again after a second
  std::vector<gid_t> answer;
  GroupMemberships flaky([&](uid_t uid) {
    ++lookups[uid];
    return answer;
  });
  EXPECT_TRUE(flaky.of(50, t0).empty());
  answer = {51};
  EXPECT_TRUE(flaky.of(50, t0 + std::chrono::milliseconds(999)).empty());
  EXPECT_EQ(flaky.of(50, t0 + GroupMemberships::kNoGroupsFreshFor), std::vector<gid_t>{51});
  EXPECT_EQ(lookups[50], 2);
}

TEST(ReporterAccess, NamesResolveOrTheConfigIsRefusedWithTheFix) {
  http::EscalateConfig escalate;
  escalate.reporter_users = {"root"};
  escalate.reporter_groups = {"root"};
  auto access = ReporterAccess::resolve(escalate);
  ASSERT_TRUE(access.ok()) << access.error().message;
  EXPECT_EQ(access->users, std::vector<uid_t>{0});
  escalate.reporter_users = {"no-such-user-fg"};
  auto bad = ReporterAccess::resolve(escalate);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message,
            "http.escalate.reporter_users: there is no user 'no-such-user-fg' on this host: fix "
            "the name, or drop it from the list");
  escalate.reporter_users.clear();
  escalate.socket_group = "no-such-group-fg";
  bad = ReporterAccess::resolve(escalate);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message,
            "http.escalate.socket_group: there is no group 'no-such-group-fg' on this host: "
            "create it (groupadd no-such-group-fg) or fix the name");
}

class ReportSocketTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/fg-report-socket-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    chmod(dir_.c_str(), 0755);  // another user must reach the socket inside
    path_ = dir_ + "/reports.sock";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Sends `line` from a child process running as `uid`:`gid`.
  void sendAs(uid_t uid, gid_t gid, const std::string& line) {
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      if (setgroups(0, nullptr) != 0 || setgid(gid) != 0 || setuid(uid) != 0) _exit(3);
      int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
      sockaddr_un address{};
      address.sun_family = AF_UNIX;
      std::strcpy(address.sun_path, path_.c_str());
      ssize_t n = sendto(fd, line.data(), line.size(), 0, reinterpret_cast<sockaddr*>(&address),
                         sizeof(address));
      _exit(n == static_cast<ssize_t>(line.size()) ? 0 : 4);
    }
    int status = 0;
    waitpid(child, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_EQ(WEXITSTATUS(status), 0) << "3: could not drop to the uid, 4: could not send";
  }

  std::string dir_, path_;
};

TEST_F(ReportSocketTest, TheSocketIsBornWithItsModeAndGroupAndNothingIsLeftBeside) {
  if (geteuid() != 0) GTEST_SKIP() << "giving a socket another group needs root";
  auto listener = ReportListener::bind(path_, 65534);
  ASSERT_TRUE(listener.ok()) << listener.error().message;
  struct stat st {};
  ASSERT_EQ(lstat(path_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0660u);
  EXPECT_EQ(st.st_gid, 65534u);
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir_)) ++entries;
  EXPECT_EQ(entries, 1u) << "the private directory it was made in is gone";
}

// A directory on the way that another user may write: they could swap the directory the
// socket is made in for their own, or replace the socket and read every report.
TEST_F(ReportSocketTest, ADirectoryAnotherUserMayWriteIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "giving a directory to another user needs root";
  ASSERT_EQ(chmod(dir_.c_str(), 0777), 0);
  auto listener = ReportListener::bind(path_);
  ASSERT_FALSE(listener.ok());
  EXPECT_NE(listener.error().message.find("mode 0777"), std::string::npos)
      << listener.error().message;
  ASSERT_EQ(chmod(dir_.c_str(), 01777), 0);
  EXPECT_FALSE(ReportListener::bind(path_).ok()) << "sticky, as /tmp: another could hold the path";
  const std::string below = dir_ + "/below";
  ASSERT_EQ(mkdir(below.c_str(), 0755), 0);
  EXPECT_TRUE(ReportListener::bind(below + "/reports.sock").ok())
      << "under a sticky directory nobody moves what is ours";

  ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
  ASSERT_EQ(chown(dir_.c_str(), 65534, 65534), 0);
  listener = ReportListener::bind(below + "/reports.sock");
  ASSERT_FALSE(listener.ok()) << "another user's directory on the way";
  EXPECT_NE(listener.error().message.find("the directory " + dir_ + " "), std::string::npos)
      << listener.error().message;
  EXPECT_NE(listener.error().message.find("owner uid 65534"), std::string::npos)
      << listener.error().message;
  EXPECT_FALSE(std::filesystem::exists(below + "/reports.sock"));
}

TEST_F(ReportSocketTest, ASocketPathHeldByAnotherKindOfFileIsNeverReplaced) {
  std::ofstream(path_) << "not a socket\n";
  auto listener = ReportListener::bind(path_);
  ASSERT_FALSE(listener.ok());
  EXPECT_NE(listener.error().message.find("exists and is not a socket"), std::string::npos)
      << listener.error().message;
}

// Another program's socket moved over the listener's path (a listener refuses to take the
// path of one that answers, but not everyone asks): the listener, ending, leaves it in place.
TEST_F(ReportSocketTest, AListenerEndingLeavesASocketMadeOverItsPathByAnother) {
  auto first = ReportListener::bind(path_);
  ASSERT_TRUE(first.ok()) << first.error().message;
  UniqueFd other(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  sockaddr_un staged{};
  staged.sun_family = AF_UNIX;
  const std::string staged_path = path_ + ".other";
  std::strcpy(staged.sun_path, staged_path.c_str());
  ASSERT_EQ(::bind(other.get(), reinterpret_cast<sockaddr*>(&staged), sizeof(staged)), 0);
  ASSERT_EQ(std::rename(staged_path.c_str(), path_.c_str()), 0);
  { ReportListener ending = std::move(*first); }
  struct stat st {};
  ASSERT_EQ(lstat(path_.c_str(), &st), 0) << "the other socket was removed";
  const std::string line = "offender 198.51.100.7 rejections=80 within_ms=5000";
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strcpy(address.sun_path, path_.c_str());
  const ssize_t sent = sendto(fd, line.data(), line.size(), 0,
                              reinterpret_cast<sockaddr*>(&address), sizeof(address));
  close(fd);
  ASSERT_EQ(sent, static_cast<ssize_t>(line.size())) << std::strerror(errno);
  char got[128];
  EXPECT_EQ(recv(other.get(), got, sizeof(got), MSG_DONTWAIT), static_cast<ssize_t>(line.size()))
      << "the path no longer reaches the other socket";
}

TEST_F(ReportSocketTest, EveryDatagramCarriesTheSendersCredentialsFromTheKernel) {
  if (geteuid() != 0) GTEST_SKIP() << "sending as another user needs root";
  auto listener = ReportListener::bind(path_, 65534);  // nogroup may write to it
  ASSERT_TRUE(listener.ok()) << listener.error().message;
  sendAs(65534, 65534, "offender 198.51.100.7 rejections=50 within_ms=10000\n");
  auto reports = listener->drain(10);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_TRUE(reports[0].over_socket);
  EXPECT_EQ(reports[0].uid, 65534u);
  EXPECT_EQ(reports[0].gid, 65534u);
  EXPECT_EQ(reports[0].reporter, "uid 65534");
  ReporterAccess root_only;
  EXPECT_FALSE(root_only.allows(reports[0].uid, reports[0].gid));
}

}  // namespace
}  // namespace floodgate::daemon
