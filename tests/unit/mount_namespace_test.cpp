// SPDX-License-Identifier: MIT
// Unit tests of mayMountBpffs: a bpffs is mounted only where it outlives the command.
#include <gtest/gtest.h>

#include "kernel/system.h"

namespace floodgate {
namespace {

TEST(MayMountBpffs, TheHostsMountNamespaceMayMount) {
  EXPECT_TRUE(mayMountBpffs(true, true, "/sys/fs/bpf").ok());
}

TEST(MayMountBpffs, APrivateMountNamespaceIsRefusedWithTheNsenterAdvice) {
  Status s = mayMountBpffs(true, false, "/sys/fs/bpf");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("ip netns exec"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("nsenter --net="), std::string::npos) << s.error().message;
}

// /proc/1/ns/mnt unreadable (EACCES under some init systems and sandboxes): the namespace
// may be private, so nothing is mounted, whatever the comparison of unread links says.
TEST(MayMountBpffs, ANamespaceThatCannotBeToldIsRefusedToo) {
  for (bool same : {true, false}) {
    Status s = mayMountBpffs(false, same, "/sys/fs/bpf");
    ASSERT_FALSE(s.ok()) << "same=" << same;
    EXPECT_NE(s.error().message.find("nsenter --net="), std::string::npos) << s.error().message;
    EXPECT_NE(s.error().message.find("/proc/1/ns/mnt"), std::string::npos) << s.error().message;
    EXPECT_NE(s.error().message.find("mount -t bpf bpf /sys/fs/bpf"), std::string::npos);
    EXPECT_EQ(s.error().message.find('\n'), std::string::npos) << "one line";
  }
}

}  // namespace
}  // namespace floodgate
