// SPDX-License-Identifier: MIT
// AnswerLock: a request answers from the last answer only while a long section holds the
// lock past its wait; the short holds of the event loop, before and after one, are waited for.
#include "daemon/answer_lock.h"

#include <gtest/gtest.h>

#include <future>
#include <optional>
#include <thread>

namespace floodgate::daemon {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kWait{200};

// Holds `mutex` on a thread of its own, as a long section of `long_section` or (null) as a
// short hold, from construction until release() or destruction.
class Holder {
 public:
  Holder(std::timed_mutex& mutex, AnswerLock* long_section) {
    std::promise<void> held;
    std::future<void> taken = held.get_future();
    thread_ = std::thread([&mutex, long_section, &held, go = release_.get_future()] {
      std::unique_lock lock(mutex);
      std::optional<AnswerLock::LongHold> hold;  // gone before the lock is let go
      if (long_section != nullptr) hold.emplace(*long_section);
      held.set_value();
      go.wait();
    });
    taken.wait();
  }
  ~Holder() { release(); }
  void release() {
    if (!thread_.joinable()) return;
    release_.set_value();
    thread_.join();
  }

 private:
  std::promise<void> release_;
  std::thread thread_;
};

struct Asked {
  bool locked;
  milliseconds took;
};

// One request's lock: whether it got it, and how long it took to know.
Asked ask(AnswerLock& answers, std::timed_mutex& mutex) {
  std::unique_lock lock(mutex, std::defer_lock);
  const auto start = std::chrono::steady_clock::now();
  const bool locked = answers.lock(lock);
  return {locked,
          std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start)};
}

TEST(AnswerLock, DuringALongSectionOneRequestWaitsAndTheNextAnswerAtOnce) {
  std::timed_mutex mutex;
  AnswerLock answers(kWait);
  Holder apply(mutex, &answers);
  const Asked first = ask(answers, mutex);
  EXPECT_FALSE(first.locked);
  EXPECT_GE(first.took, kWait * 3 / 4) << "it waited for the lock first";
  for (int i = 0; i < 3; ++i) {
    const Asked next = ask(answers, mutex);
    EXPECT_FALSE(next.locked);
    EXPECT_LT(next.took, kWait / 2) << "request " << i << " waited again";
  }
  apply.release();
  EXPECT_TRUE(ask(answers, mutex).locked);
}

// Once an apply a wait ran out in is over, the event loop still takes the lock for an instant
// many times a second (events, adapt, housekeeping; all the more during a flood): a request
// that meets one waits for it and makes a fresh answer, not the last one again.
TEST(AnswerLock, OnceTheLongSectionEndsAShortHoldIsWaitedFor) {
  std::timed_mutex mutex;
  AnswerLock answers(kWait);
  {
    Holder apply(mutex, &answers);
    ASSERT_FALSE(ask(answers, mutex).locked);
  }
  Holder pump(mutex, nullptr);
  std::thread let_go([&pump] {
    std::this_thread::sleep_for(milliseconds(50));
    pump.release();
  });
  const Asked asked = ask(answers, mutex);
  let_go.join();
  EXPECT_TRUE(asked.locked) << "answered from the last answer after the apply had ended";
}

// A hold that is not a long section and outlasts a wait (it should not happen) is waited for
// again by the next request: a request does not answer stale merely because one before it did.
TEST(AnswerLock, AShortHoldPastTheWaitLeavesTheNextRequestWaiting) {
  std::timed_mutex mutex;
  AnswerLock answers(kWait);
  Holder slow(mutex, nullptr);
  for (int i = 0; i < 2; ++i) {
    const Asked asked = ask(answers, mutex);
    EXPECT_FALSE(asked.locked);
    EXPECT_GE(asked.took, kWait * 3 / 4) << "request " << i << " answered without waiting";
  }
}

// A wait that ran out in one apply says nothing of the next: its first request waits again.
TEST(AnswerLock, TheNextLongSectionIsWaitedForAgain) {
  std::timed_mutex mutex;
  AnswerLock answers(kWait);
  {
    Holder apply(mutex, &answers);
    ASSERT_FALSE(ask(answers, mutex).locked);
  }
  Holder reload(mutex, &answers);
  const Asked asked = ask(answers, mutex);
  EXPECT_FALSE(asked.locked);
  EXPECT_GE(asked.took, kWait * 3 / 4) << "the new apply was taken for the old one";
}

}  // namespace
}  // namespace floodgate::daemon
