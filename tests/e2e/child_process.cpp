// SPDX-License-Identifier: MIT
// ChildProcess: fork and exec, a polling waitpid with a deadline, SIGKILL in the destructor.
#include "e2e/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

namespace floodgate::test {

Result<ChildProcess> ChildProcess::start(const std::vector<std::string>& argv,
                                         const std::string& log_path) {
  int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log < 0) return Error::failure("cannot create " + log_path + ": " + std::strerror(errno));
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    close(log);
    return Error::failure(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    // Killed with the test even if the test itself dies without unwinding.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(log, STDOUT_FILENO);
    dup2(log, STDERR_FILENO);
    // The test may have signals blocked in some thread; the child starts clean.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(log);
  ChildProcess out;
  out.pid_ = pid;
  out.log_path_ = log_path;
  return out;
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), log_path_(std::move(other.log_path_)) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    stop();
    pid_ = std::exchange(other.pid_, -1);
    log_path_ = std::move(other.log_path_);
  }
  return *this;
}

ChildProcess::~ChildProcess() { stop(); }

void ChildProcess::stop() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
}

void ChildProcess::signal(int signo) const {
  if (pid_ > 0) kill(pid_, signo);
}

int ChildProcess::wait(double seconds) {
  if (pid_ <= 0) return -1;
  for (int i = 0; i < static_cast<int>(seconds * 100); ++i) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    usleep(10000);
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
  return -1;
}

std::string ChildProcess::log() const {
  std::ifstream in(log_path_);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace floodgate::test
