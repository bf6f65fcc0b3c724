// SPDX-License-Identifier: MIT
// Test helpers that run private redis-server processes (one server, or a 3-master cluster)
// on free loopback ports in temporary directories; never a system Redis.
#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "floodgate/redis/client.h"

namespace floodgate::http::testing {

// One redis-server child process. Killed (and its directory removed) when destroyed.
class RedisServer {
 public:
  // Starts a server on a free port; nullptr if redis-server is missing or will not start.
  static std::unique_ptr<RedisServer> start(std::vector<std::string> extra_args = {});
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  int port() const { return port_; }
  redis::Address address() const { return {"127.0.0.1", port_}; }
  // SIGKILL, as a crash would; then start again on the same port and directory.
  void kill();
  bool restart();
  // SIGSTOP, as a server stuck in a long command or swapped out would be: the kernel still
  // accepts connections and requests for it, but nothing is answered until thaw(). Returns
  // once the process has stopped.
  void freeze();
  void thaw();
  // Runs one command on its own connection (2 s timeout), logged in as loginAs() says; an
  // Error if it could not.
  Result<redis::Reply> command(const redis::Command& command) const;
  // The login command() uses from now on, once the server asks for one (CONFIG SET
  // requirepass, ACL SETUSER).
  void loginAs(redis::Credentials credentials) { credentials_ = std::move(credentials); }
  // Takes the expiry off every key matching one of `patterns` (KEYS patterns). A test on a
  // virtual clock needs it: the scripts set each key's expiry in Redis's real time, so a
  // key whose state still counts on the test's clock would vanish when the machine is slow.
  Status persistKeys(const std::vector<std::string>& patterns) const;

 private:
  RedisServer(int port, int port_reserved, std::string dir, std::vector<std::string> args)
      : port_(port), port_reserved_(port_reserved), dir_(std::move(dir)), args_(std::move(args)) {}
  bool spawn();

  int port_;
  int port_reserved_;  // the lock that keeps the port this server's across a restart
  std::string dir_;
  std::vector<std::string> args_;
  redis::Credentials credentials_;
  int pid_ = -1;
};

// Three masters that own all 16384 slots between them.
class RedisCluster {
 public:
  static std::unique_ptr<RedisCluster> start();
  std::vector<redis::Address> addresses() const;
  RedisServer& node(size_t i) { return *nodes_[i]; }

 private:
  std::vector<std::unique_ptr<RedisServer>> nodes_;
};

// Whether redis-server (and redis-cli, for clusters) can be run here.
bool haveRedis();

// Field `index` (from 0) of a key's state as the scripts store it, integers packed as 8
// bytes each, little-endian ("W N L" for a fixed window), in decimal; "" when it has fewer.
std::string stateField(const std::string& state, size_t index);

// A state as the scripts store it: each integer as 8 bytes, little-endian.
std::string packedState(std::initializer_list<int64_t> fields);

}  // namespace floodgate::http::testing
