// SPDX-License-Identifier: MIT
// AnswerLock: a request answers from the last answer only while a hold it already waited out
// goes on; the next hold, short or long, is waited for again.
#include "daemon/answer_lock.h"

#include <gtest/gtest.h>

#include <future>
#include <optional>
#include <thread>

namespace floodgate::daemon {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kWait{200};

// Holds the lock of `answers` on a thread of its own, from construction until release() or
// destruction.
class Holder {
 public:
  explicit Holder(AnswerLock& answers) {
    std::promise<void> held;
    std::future<void> taken = held.get_future();
    thread_ = std::thread([&answers, &held, go = release_.get_future()] {
      const AnswerLock::Hold hold(answers);
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
Asked ask(AnswerLock& answers) {
  std::unique_lock lock = answers.forRequest();
  const auto start = std::chrono::steady_clock::now();
  const bool locked = answers.lock(lock);
  return {locked,
          std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start)};
}

TEST(AnswerLock, DuringALongHoldOneRequestWaitsAndTheNextAnswerAtOnce) {
  AnswerLock answers(kWait);
  Holder apply(answers);
  const Asked first = ask(answers);
  EXPECT_FALSE(first.locked);
  EXPECT_GE(first.took, kWait * 3 / 4) << "it waited for the lock first";
  for (int i = 0; i < 3; ++i) {
    const Asked next = ask(answers);
    EXPECT_FALSE(next.locked);
    EXPECT_LT(next.took, kWait / 2) << "request " << i << " waited again";
  }
  apply.release();
  EXPECT_TRUE(ask(answers).locked);
}

// Once an apply a wait ran out in is over, the event loop still takes the lock for an instant
// many times a second (events, adapt, housekeeping; all the more during a flood): a request
// that meets one waits for it and makes a fresh answer, not the last one again.
TEST(AnswerLock, OnceTheLongHoldEndsAShortHoldIsWaitedFor) {
  AnswerLock answers(kWait);
  {
    Holder apply(answers);
    ASSERT_FALSE(ask(answers).locked);
  }
  Holder pump(answers);
  std::thread let_go([&pump] {
    std::this_thread::sleep_for(milliseconds(50));
    pump.release();
  });
  const Asked asked = ask(answers);
  let_go.join();
  EXPECT_TRUE(asked.locked) << "answered from the last answer after the apply had ended";
}

// A wait that ran out in one apply says nothing of the next: its first request waits again.
TEST(AnswerLock, TheNextHoldIsWaitedForAgain) {
  AnswerLock answers(kWait);
  {
    Holder apply(answers);
    ASSERT_FALSE(ask(answers).locked);
  }
  Holder reload(answers);
  const Asked asked = ask(answers);
  EXPECT_FALSE(asked.locked);
  EXPECT_GE(asked.took, kWait * 3 / 4) << "the new apply was taken for the old one";
}

}  // namespace
}  // namespace floodgate::daemon
