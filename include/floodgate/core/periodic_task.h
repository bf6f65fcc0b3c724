// SPDX-License-Identifier: MIT
// PeriodicTask: runs a function on a thread of its own every period, until destroyed.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace floodgate::http {

// Calls `fn` every `period_ms` (real time; the first call at once when `first_at_once`, else
// one period after start). Destruction wakes the thread and waits for a call under way to
// end. A period of 0 or less starts nothing. Not copyable; thread-safe to destroy.
class PeriodicTask {
 public:
  PeriodicTask(int64_t period_ms, bool first_at_once, std::function<void()> fn) {
    if (period_ms <= 0) return;
    thread_ = std::thread([this, period_ms, first_at_once, fn = std::move(fn)] {
      std::unique_lock lock(mutex_);
      bool call = first_at_once;
      while (!stop_) {
        if (call) {
          lock.unlock();
          fn();
          lock.lock();
        }
        call = true;
        wake_.wait_for(lock, std::chrono::milliseconds(period_ms), [&] { return stop_; });
      }
    });
  }
  ~PeriodicTask() { stop(); }
  PeriodicTask(const PeriodicTask&) = delete;
  PeriodicTask& operator=(const PeriodicTask&) = delete;

  // Ends the thread (idempotent): no call starts after this returns.
  void stop() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace floodgate::http
