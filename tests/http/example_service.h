// SPDX-License-Identifier: MIT
// The example service (floodgate-http-example) as a child process, for end-to-end tests.
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

extern char** environ;

namespace floodgate::http::testing {

// The example service as a child process on a free port; stopped (SIGTERM) when destroyed.
class ExampleService {
 public:
  // Started with `config_text` as its --config, and `extra` arguments (e.g. --report-ms).
  explicit ExampleService(const std::string& config_text, std::vector<std::string> extra = {}) {
    char path[] = "/tmp/floodgate-http-e2e-XXXXXX.yaml";
    int fd = mkstemps(path, 5);
    EXPECT_GE(fd, 0);
    close(fd);
    config_path_ = path;
    std::ofstream(config_path_) << config_text;
    extra.insert(extra.end(), {"--config", config_path_, "--listen", "127.0.0.1:0"});
    start(std::move(extra));
  }
  // Started with these arguments (plus --listen on a free port), e.g. {"--policies", FILE}.
  struct Arguments {
    std::vector<std::string> args;
  };
  explicit ExampleService(Arguments arguments) {
    arguments.args.insert(arguments.args.end(), {"--listen", "127.0.0.1:0"});
    start(std::move(arguments.args));
  }
  ~ExampleService() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int status = 0;
      waitpid(pid_, &status, 0);
    }
    if (out_fd_ >= 0) close(out_fd_);
    if (err_fd_ >= 0) close(err_fd_);
    if (!config_path_.empty()) std::remove(config_path_.c_str());
  }

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  // Waits for the process to end (bounded) and returns its exit code; -1 if it did not.
  int exitCode() {
    for (int i = 0; i < 100; ++i) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      poll(nullptr, 0, 50);
    }
    return -1;
  }
  std::string stderrText() { return readAll(err_fd_); }

 private:
  void start(std::vector<std::string> args) {
    int out[2], err[2];
    EXPECT_EQ(pipe(out), 0);
    EXPECT_EQ(pipe(err), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
    std::vector<char*> argv;
    std::string binary = FLOODGATE_HTTP_EXAMPLE;
    argv.push_back(binary.data());
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    EXPECT_EQ(posix_spawn(&pid_, binary.c_str(), &actions, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    close(err[1]);
    out_fd_ = out[0];
    err_fd_ = err[0];
    std::string line = readLine(out_fd_);
    size_t colon = line.rfind(':');
    if (line.rfind("listening on ", 0) == 0 && colon != std::string::npos) {
      port_ = std::atoi(line.c_str() + colon + 1);
    }
  }

  // One line of output, waiting at most 10 s in total.
  static std::string readLine(int fd) {
    std::string line;
    for (int waited_ms = 0; waited_ms < 10'000;) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) {
        waited_ms += 100;
        continue;
      }
      char c;
      if (read(fd, &c, 1) != 1) break;
      if (c == '\n') break;
      line += c;
    }
    return line;
  }
  static std::string readAll(int fd) {
    std::string text;
    char buffer[4096];
    ssize_t n;
    while ((n = read(fd, buffer, sizeof buffer)) > 0) text.append(buffer, n);
    return text;
  }

  std::string config_path_;
  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  int port_ = 0;
};

}  // namespace floodgate::http::testing
