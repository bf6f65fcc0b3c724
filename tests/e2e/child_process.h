// SPDX-License-Identifier: MIT
// ChildProcess: a program started in the background for a test (no shell), its output in a
// file, killed and reaped when the test ends however it ends.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "floodgate/common/result.h"

namespace floodgate::test {

class ChildProcess {
 public:
  // Starts `argv`; stdout and stderr go to `log_path`.
  static Result<ChildProcess> start(const std::vector<std::string>& argv,
                                    const std::string& log_path);
  ChildProcess() = default;
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();  // SIGKILL and reap, if still running

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }
  void signal(int signo) const;
  // Waits up to `seconds` for it to exit; its exit code, or -1 (killed by a signal or
  // still running after the wait, in which case it is killed).
  int wait(double seconds);
  // What it wrote so far.
  std::string log() const;

 private:
  void stop();  // SIGKILL and reap

  pid_t pid_ = -1;
  std::string log_path_;
};

}  // namespace floodgate::test
