// SPDX-License-Identifier: MIT
// WriterLock: one writer at a time per pin directory, reentrant for its holder, and held
// through a move of the lock object (a limiter handed on while its lock is held).
#include "kernel/writer_lock.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <utility>

namespace floodgate {
namespace {

class WriterLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/fg-writer-lock-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override { rmdir(dir_.c_str()); }

  // Whether another open of the directory (another command) could lock it now.
  bool freeForAnother() const {
    UniqueFd other(open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    EXPECT_TRUE(other.valid());
    if (flock(other.get(), LOCK_EX | LOCK_NB) != 0) return false;
    flock(other.get(), LOCK_UN);
    return true;
  }

  std::string dir_;
};

TEST_F(WriterLockTest, HeldUntilItsLastGuardGoes) {
  WriterLock lock(dir_);
  {
    auto first = lock.acquire("test0");
    ASSERT_TRUE(first.ok()) << first.error().message;
    EXPECT_FALSE(freeForAnother());
    {
      auto nested = lock.acquire("test0");  // a write inside a held one shares it
      ASSERT_TRUE(nested.ok()) << nested.error().message;
    }
    EXPECT_FALSE(freeForAnother()) << "a nested guard let go of the holder's lock";
    // another holder that will not wait is refused at once
    WriterLock other(dir_);
    auto refused = other.acquire("test0", std::chrono::milliseconds(0));
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message.find("another floodgate is changing test0 ("),
              std::string::npos)
        << refused.error().message;
  }
  EXPECT_TRUE(freeForAnother());
  WriterLock other(dir_);
  EXPECT_TRUE(other.acquire("test0", std::chrono::milliseconds(0)).ok()) << "free again";
}

TEST_F(WriterLockTest, AGuardOutlivesAMoveOfItsLock) {
  std::optional<WriterLock> moved;
  std::optional<WriterLock::Guard> guard;
  {
    WriterLock lock(dir_);
    auto held = lock.acquire("test0");
    ASSERT_TRUE(held.ok()) << held.error().message;
    guard.emplace(std::move(*held));
    moved.emplace(std::move(lock));
  }
  EXPECT_FALSE(freeForAnother());
  {
    auto nested = moved->acquire("test0");  // the moved lock knows it is held
    ASSERT_TRUE(nested.ok()) << nested.error().message;
  }
  EXPECT_FALSE(freeForAnother());
  guard.reset();
  EXPECT_TRUE(freeForAnother()) << "the guard did not let go of the moved lock";
  auto again = moved->acquire("test0");
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_FALSE(freeForAnother());
}

}  // namespace
}  // namespace floodgate
