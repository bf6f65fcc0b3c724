// SPDX-License-Identifier: MIT
// runCommand: fork and exec with stdout and stderr sent to temporary files, then read back.
#include "common/command.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace floodgate::test {
namespace {

std::string slurp(int fd) {
  lseek(fd, 0, SEEK_SET);
  std::string out;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof(buffer))) > 0) out.append(buffer, static_cast<size_t>(n));
  return out;
}

}  // namespace

CommandResult runCommand(const std::vector<std::string>& argv) {
  CommandResult result;
  char out_name[] = "/tmp/fg-cmd-out-XXXXXX";
  char err_name[] = "/tmp/fg-cmd-err-XXXXXX";
  int out_fd = mkstemp(out_name);
  int err_fd = mkstemp(err_name);
  unlink(out_name);
  unlink(err_name);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    int null = open("/dev/null", O_RDONLY);
    dup2(null, 0);
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = slurp(out_fd);
  result.err = slurp(err_fd);
  close(out_fd);
  close(err_fd);
  return result;
}

}  // namespace floodgate::test
