// SPDX-License-Identifier: MIT
// UDP senders (sendmmsg batches, one thread per CPU) and a per-source receiving counter,
// each thread entering the target network namespace with setns on its own.
#include "udp_traffic/udp_traffic.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "floodgate/common/cidr.h"

namespace floodgate {
namespace {

void pinToCpu(unsigned index) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus <= 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(index % static_cast<unsigned>(cpus), &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
};

Result<SocketAddress> toSocketAddress(const std::string& text, uint16_t port) {
  auto address = parseAddress(text);
  if (!address) return address.error();
  SocketAddress out;
  if (address->family == Family::kV4) {
    auto* in = reinterpret_cast<sockaddr_in*>(&out.storage);
    in->sin_family = AF_INET;
    in->sin_port = htons(port);
    std::memcpy(&in->sin_addr, address->addr.data(), 4);
    out.length = sizeof(sockaddr_in);
  } else {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&out.storage);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(port);
    std::memcpy(&in6->sin6_addr, address->addr.data(), 16);
    out.length = sizeof(sockaddr_in6);
  }
  return out;
}

}  // namespace

Status enterNetns(const std::string& netns) {
  if (netns.empty()) return okStatus();
  int fd = open(netns.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Error::failure("cannot open network namespace " + netns + ": " + std::strerror(errno));
  int err = setns(fd, CLONE_NEWNET);
  close(fd);
  if (err != 0)
    return Error::failure("cannot enter network namespace " + netns + ": " + std::strerror(errno));
  return okStatus();
}

double monotonicSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

Result<UdpSendResult> sendUdp(const UdpSendOptions& options) {
  auto source = toSocketAddress(options.source, 0);
  if (!source) return source.error();
  auto destination = toSocketAddress(options.destination, options.port);
  if (!destination) return destination.error();

  std::mutex mutex;
  UdpSendResult total;
  total.first_send_s = 1e300;
  std::string failure;
  unsigned threads = std::max(1u, options.threads);
  double per_thread_pps = options.rate_pps ? static_cast<double>(options.rate_pps) / threads : 0;

  auto worker = [&](unsigned index) {
    auto fail = [&](const std::string& message) {
      std::lock_guard lock(mutex);
      failure = message;
    };
    if (Status s = enterNetns(options.netns); !s) return fail(s.error().message);
    pinToCpu(index);
    int fd = socket(source->storage.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return fail(std::string("socket: ") + std::strerror(errno));
    if (bind(fd, reinterpret_cast<const sockaddr*>(&source->storage), source->length) != 0) {
      close(fd);
      return fail("cannot send from " + options.source + ": " + std::strerror(errno));
    }
    if (options.unsent_when_queue_full) {
      const int on = 1;
      const bool v6 = source->storage.ss_family == AF_INET6;
      if (setsockopt(fd, v6 ? IPPROTO_IPV6 : IPPROTO_IP, v6 ? IPV6_RECVERR : IP_RECVERR, &on,
                     sizeof(on)) != 0) {
        close(fd);
        return fail(std::string("IP_RECVERR: ") + std::strerror(errno));
      }
    }
    constexpr unsigned kBatch = 32;
    std::vector<uint8_t> payload(options.payload_bytes, 0x5a);
    iovec iov{payload.data(), payload.size()};
    mmsghdr messages[kBatch]{};
    for (auto& m : messages) {
      m.msg_hdr.msg_name = &destination->storage;
      m.msg_hdr.msg_namelen = destination->length;
      m.msg_hdr.msg_iov = &iov;
      m.msg_hdr.msg_iovlen = 1;
    }
    uint64_t sent = 0;
    double start = monotonicSeconds(), first = 0, last = 0, now = start, idle = 0;
    const double end = start + options.seconds;
    while (now < end && !(options.stop && options.stop->load())) {
      unsigned batch = kBatch;
      if (per_thread_pps > 0) {
        // paced: send what is due by now, at most one batch
        double due = (now - start) * per_thread_pps - static_cast<double>(sent);
        if (options.max_burst && due > static_cast<double>(options.max_burst)) {
          start += (due - static_cast<double>(options.max_burst)) / per_thread_pps;
          due = static_cast<double>(options.max_burst);
        }
        if (due < 1) {
          usleep(200);
          now = monotonicSeconds();
          continue;
        }
        batch = static_cast<unsigned>(std::min<double>(due, kBatch));
      }
      const double before = monotonicSeconds();
      int n = sendmmsg(fd, messages, batch, 0);
      now = monotonicSeconds();
      if (n > 0) {
        // A call may be preempted anywhere in it, so its packets went at some time between
        // its start and its end: from one call to the next, none may have gone from the
        // start of the one to the end of the other. The first call's packets had all gone
        // by its end; the last call's went after its start.
        if (sent == 0) first = now;
        if (sent != 0) idle += std::max(0.0, now - last - options.gap_allowance_s);
        sent += static_cast<uint64_t>(n);
        last = before;
      } else if (errno != ENOBUFS && errno != EAGAIN && errno != EINTR &&
                 errno != ECONNREFUSED) {  // with IP_RECVERR: an earlier packet's ICMP error
        close(fd);
        return fail(std::string("sendmmsg: ") + std::strerror(errno));
      }
    }
    close(fd);
    std::lock_guard lock(mutex);
    total.sent += sent;
    if (sent) {
      total.first_send_s = std::min(total.first_send_s, first);
      total.last_send_s = std::max(total.last_send_s, last);
    }
    // nothing arrived from any thread only while every thread was idle: the least idle
    // thread bounds that time
    total.idle_s = std::min(total.idle_s, idle);
  };

  std::vector<std::thread> pool;
  for (unsigned i = 0; i < threads; ++i) pool.emplace_back(worker, i);
  for (auto& t : pool) t.join();
  if (!failure.empty()) return Error::failure(failure);
  if (total.sent == 0) total.first_send_s = total.last_send_s = 0;
  if (pool.empty()) total.idle_s = 0;
  return total;
}

UdpCounter::~UdpCounter() { stop(); }

Status UdpCounter::start(const std::string& netns, uint16_t port) {
  std::mutex mutex;
  std::string failure;
  std::atomic<bool> ready{false};
  running_ = true;
  thread_ = std::thread([&, port, netns] {
    auto fail = [&](const std::string& message) {
      std::lock_guard lock(mutex);
      failure = message;
      ready = true;
    };
    if (Status s = enterNetns(netns); !s) return fail(s.error().message);
    int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    int off = 0, big = 8 << 20;
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
    timeval timeout{0, 100000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    sockaddr_in6 any{};
    any.sin6_family = AF_INET6;
    any.sin6_port = htons(port);
    if (bind(fd, reinterpret_cast<sockaddr*>(&any), sizeof(any)) != 0) {
      close(fd);
      return fail("cannot listen on UDP port " + std::to_string(port) + ": " +
                  std::strerror(errno));
    }
    fd_ = fd;
    ready = true;
    char buffer[2048];
    // Counts one datagram; false when none came (within the timeout, or at once).
    auto receive = [&](int flags) {
      sockaddr_in6 from{};
      socklen_t from_len = sizeof(from);
      ssize_t n = recvfrom(fd, buffer, sizeof(buffer), flags, reinterpret_cast<sockaddr*>(&from),
                           &from_len);
      if (n < 0) return false;
      std::string source;
      if (IN6_IS_ADDR_V4MAPPED(&from.sin6_addr)) {
        source = formatAddress(Family::kV4, from.sin6_addr.s6_addr + 12);
      } else {
        source = formatAddress(Family::kV6, from.sin6_addr.s6_addr);
      }
      ++counts_[source];
      return true;
    };
    while (running_) receive(0);
    // what the kernel delivered before the stop but this thread had no CPU to read yet
    while (receive(MSG_DONTWAIT)) {
    }
    close(fd);
  });
  while (!ready) usleep(1000);
  if (!failure.empty()) {
    thread_.join();
    running_ = false;
    return Error::failure(failure);
  }
  return okStatus();
}

std::map<std::string, uint64_t> UdpCounter::stop() {
  if (running_) {
    running_ = false;
    if (thread_.joinable()) thread_.join();
  }
  return counts_;
}

}  // namespace floodgate
