// SPDX-License-Identifier: MIT
// Private redis-server processes for the redis tests: started, killed, frozen and restarted.
#include "redis/redis_server.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "floodgate/redis/store_factory.h"

extern char** environ;

namespace floodgate::http::testing {

namespace {

bool portFree(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

// Keeps `port` for this process: an exclusive flock on a file named after it, which the
// servers of tests running in parallel skip. A server holds it for as long as it lives,
// killed and started again included: a port freed by a kill (a test of a Redis that goes away
// and comes back) would otherwise go to another test's new server, which the restart then
// cannot bind, or which the first test's clients would reach. The files are everyone's (a
// root run of the benchmark must not lock a user's tests out): opened without O_CREAT, which
// fs.protected_regular would refuse on another user's, and one that cannot be opened at all
// is taken as held. -1 when the port is held; kNoReservation when no file can be made there,
// and the port is used unkept.
constexpr int kNoReservation = -2;
int reservePort(int port) {
  const std::filesystem::path dir = "/tmp/floodgate-redis-ports";
  if (mkdir(dir.c_str(), 01777) == 0) chmod(dir.c_str(), 01777);  // past the umask
  const std::string path = (dir / std::to_string(port)).string();
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {
    fd = open(path.c_str(), O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      fchmod(fd, 0666);  // past the umask
    } else if (errno == EEXIST) {
      fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);  // made by another meanwhile
    } else {
      return kNoReservation;  // a directory this user cannot make files in
    }
  }
  if (fd < 0) return -1;  // another user's, not to be opened
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// A free port whose cluster bus port (+10000) is free too, reserved for the caller: its lock
// in `reserved` (reservePort).
int freePort(int& reserved) {
  static int next = 20000 + static_cast<int>(getpid() % 5000) * 4;
  for (int tries = 0; tries < 5000; ++tries) {
    int port = next;
    next = next + 1 >= 30000 ? 20000 : next + 1;
    if (!portFree(port) || !portFree(port + 10000)) continue;
    reserved = reservePort(port);
    if (reserved != -1) return port;
  }
  return -1;
}

int run(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid;
  if (posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

std::string stateField(const std::string& state, size_t index) {
  if (state.size() < 8 * (index + 1)) return "";
  uint64_t bits = 0;
  for (size_t i = 0; i < 8; ++i) {
    bits |= uint64_t{static_cast<unsigned char>(state[8 * index + i])} << (8 * i);
  }
  return std::to_string(static_cast<int64_t>(bits));
}

std::string packedState(std::initializer_list<int64_t> fields) {
  std::string out;
  for (int64_t field : fields) {
    const auto bits = static_cast<uint64_t>(field);
    for (size_t i = 0; i < 8; ++i) out.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
  }
  return out;
}

bool haveRedis() {
  return run({"sh", "-c",
              "command -v redis-server >/dev/null && command -v redis-cli >/dev/null"}) == 0;
}

std::unique_ptr<RedisServer> RedisServer::start(std::vector<std::string> extra_args) {
  // The tests build limiters from configs whose store is this server.
  useRedisStores();
  for (int attempt = 0; attempt < 5; ++attempt) {
    int reserved = -1;
    int port = freePort(reserved);
    if (port < 0) return nullptr;
    std::string dir = (std::filesystem::temp_directory_path() /
                       ("floodgate-redis-" + std::to_string(getpid()) + "-" + std::to_string(port)))
                          .string();
    std::filesystem::create_directories(dir);
    std::unique_ptr<RedisServer> server(new RedisServer(port, reserved, dir, extra_args));
    if (server->spawn()) return server;
  }
  return nullptr;
}

bool RedisServer::spawn() {
  std::vector<std::string> args = {"redis-server",
                                   "--port",
                                   std::to_string(port_),
                                   "--bind",
                                   "127.0.0.1",
                                   "--dir",
                                   dir_,
                                   "--save",
                                   "",
                                   "--appendonly",
                                   "no",
                                   "--daemonize",
                                   "no",
                                   "--logfile",
                                   dir_ + "/redis.log",
                                   "--enable-debug-command",
                                   "yes"};
  args.insert(args.end(), args_.begin(), args_.end());
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    // A test that crashes (or is killed by ctest's timeout) takes its servers with it.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    execvp("redis-server", argv.data());
    _exit(127);
  }
  pid_ = pid;
  // Tests run in parallel pick ports from overlapping ranges: another test's server may
  // answer on this port while ours fails to bind it. Only our own process will do.
  const std::string ours = "process_id:" + std::to_string(pid_) + "\r\n";
  for (int i = 0; i < 200; ++i) {
    auto info = command({"INFO", "server"});
    if (info && info->str.find(ours) != std::string::npos) return true;
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {  // exited: port taken after all?
      pid_ = -1;
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill();
  return false;
}

RedisServer::~RedisServer() {
  kill();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
  if (port_reserved_ >= 0) close(port_reserved_);  // kNoReservation: none to close
}

void RedisServer::kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

void RedisServer::freeze() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGSTOP);
  int status = 0;
  if (waitpid(pid_, &status, WUNTRACED) == pid_ && !WIFSTOPPED(status)) pid_ = -1;  // had died
}

void RedisServer::thaw() {
  if (pid_ > 0) ::kill(pid_, SIGCONT);
}

bool RedisServer::restart() {
  kill();
  // The port was ours a moment ago; give the kernel a little while to free it.
  for (int i = 0; i < 50; ++i) {
    if (spawn()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

Result<redis::Reply> RedisServer::command(const redis::Command& command) const {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  auto connection = redis::Connection::open(address(), deadline, credentials_);
  if (!connection) return connection.error();
  auto replies = (*connection)->pipeline({command}, deadline);
  if (!replies) return replies.error();
  return (*replies)[0];
}

Status RedisServer::persistKeys(const std::vector<std::string>& patterns) const {
  redis::Command persist{"EVAL",
                         "for _, p in ipairs(ARGV) do for _, k in ipairs(redis.call('KEYS', p)) "
                         "do redis.call('PERSIST', k) end end",
                         "0"};
  persist.insert(persist.end(), patterns.begin(), patterns.end());
  auto reply = command(persist);
  if (!reply) return reply.error();
  if (reply->isError()) return Error::failure("PERSIST: " + reply->str);
  return okStatus();
}

std::unique_ptr<RedisCluster> RedisCluster::start() {
  auto cluster = std::unique_ptr<RedisCluster>(new RedisCluster);
  for (int i = 0; i < 3; ++i) {
    auto node = RedisServer::start({"--cluster-enabled", "yes", "--cluster-config-file",
                                    "nodes.conf", "--cluster-node-timeout", "2000"});
    if (!node) return nullptr;
    cluster->nodes_.push_back(std::move(node));
  }
  std::vector<std::string> create = {"redis-cli", "--cluster", "create"};
  for (const redis::Address& a : cluster->addresses()) create.push_back(a.text());
  create.insert(create.end(), {"--cluster-replicas", "0", "--cluster-yes"});
  std::string quiet = "exec >/dev/null 2>&1;";
  std::string line;
  for (const std::string& a : create) line += " " + a;
  if (run({"sh", "-c", quiet + line}) != 0) return nullptr;
  // The slots are assigned at once, but every node must agree before keys are served.
  for (int i = 0; i < 300; ++i) {
    bool ok = true;
    for (auto& node : cluster->nodes_) {
      auto info = node->command({"CLUSTER", "INFO"});
      ok = ok && info && info->str.find("cluster_state:ok") != std::string::npos;
    }
    if (ok) return cluster;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return nullptr;
}

std::vector<redis::Address> RedisCluster::addresses() const {
  std::vector<redis::Address> out;
  for (const auto& node : nodes_) out.push_back(node->address());
  return out;
}

}  // namespace floodgate::http::testing
