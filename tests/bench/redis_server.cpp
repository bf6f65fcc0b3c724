// SPDX-License-Identifier: MIT
// floodgate_bench_redis: one private redis-server for scripts/bench.sh, started as the redis
// tests start theirs (a free loopback port, a temporary directory, no persistence). Prints
// "redis 127.0.0.1:PORT", keeps it until SIGTERM or SIGINT (or until the script that started
// this dies), then stops it and removes its directory.
#include "redis/redis_server.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <iostream>

int main() {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  const pid_t parent = getppid();
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) return 1;  // the parent died before the line above

  auto server = floodgate::http::testing::RedisServer::start();
  if (!server) {
    std::cerr << "floodgate_bench_redis: error: redis-server did not start (is it installed?)\n";
    return 1;
  }
  std::cout << "redis " << server->address().text() << std::endl;
  int signal = 0;
  sigwait(&stop, &signal);
  return 0;  // the server is stopped and its directory removed on the way out
}
