// SPDX-License-Identifier: MIT
// randomBytes: random where getrandom() answers and where a seccomp filter refuses it (the
// fallback, /dev/urandom), never a fixed value an attacker could know.
#include "floodgate/common/random_bytes.h"

#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

namespace floodgate {
namespace {

// Draws two 8-byte values; 0 when they are random-looking (set, and not equal), 1 otherwise.
int drawTwoDifferent() {
  uint64_t a = 0, b = 0;
  if (!randomBytes(&a, sizeof a) || !randomBytes(&b, sizeof b)) return 1;
  return a != 0 && b != 0 && a != b ? 0 : 1;
}

// In this process from now on, getrandom() fails with ENOSYS, as under a container's
// seccomp profile that predates it.
bool refuseGetrandom() {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getrandom, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog program = {static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) == 0;
}

TEST(RandomBytes, AreRandom) { EXPECT_EQ(drawTwoDifferent(), 0); }

TEST(RandomBytes, AreRandomWhereGetrandomIsRefused) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (!refuseGetrandom()) _exit(2);
    uint64_t probe = 0;
    if (syscall(SYS_getrandom, &probe, sizeof probe, 0) != -1 || errno != ENOSYS) _exit(3);
    _exit(drawTwoDifferent());
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_NE(WEXITSTATUS(status), 2) << "could not install the seccomp filter";
  EXPECT_NE(WEXITSTATUS(status), 3) << "getrandom() was not refused";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the fallback gave no random bytes";
}

}  // namespace
}  // namespace floodgate
