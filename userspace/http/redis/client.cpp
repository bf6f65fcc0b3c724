// SPDX-License-Identifier: MIT
// Routing commands to servers by slot, one pipeline per server, and following redirections.
#include "floodgate/redis/client.h"

#include <algorithm>
#include <condition_variable>
#include <iterator>
#include <map>
#include <mutex>

namespace floodgate::http::redis {

namespace {

// CRC16-CCITT (XModem), the checksum Redis Cluster assigns slots with.
constexpr std::array<uint16_t, 256> makeCrcTable() {
  std::array<uint16_t, 256> table{};
  for (int i = 0; i < 256; ++i) {
    uint16_t crc = static_cast<uint16_t>(i << 8);
    for (int bit = 0; bit < 8; ++bit) {
      crc = static_cast<uint16_t>((crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    table[i] = crc;
  }
  return table;
}
constexpr auto kCrcTable = makeCrcTable();

uint16_t crc16(std::string_view bytes) {
  uint16_t crc = 0;
  for (unsigned char c : bytes) {
    crc = static_cast<uint16_t>((crc << 8) ^ kCrcTable[((crc >> 8) ^ c) & 0xff]);
  }
  return crc;
}

}  // namespace

uint16_t keySlot(std::string_view key) {
  size_t open = key.find('{');
  if (open != std::string_view::npos) {
    size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  return crc16(key) & 0x3fff;
}

// One server: its idle connections, and the calls waiting to share the next round trip.
class Client::Node {
 public:
  Node(Address address, size_t max_idle, Credentials credentials)
      : address_(std::move(address)), max_idle_(max_idle), credentials_(std::move(credentials)) {}

  const Address& address() const { return address_; }

  size_t waiting() {
    std::lock_guard lock(queue_mutex_);
    return queue_.size();
  }

  // Runs `commands` in a round trip of their own, or shared with the calls of other threads
  // that come meanwhile (see Client). Counts the round trips made in `trips`.
  Result<std::vector<Reply>> call(const std::vector<Command>& commands, Deadline deadline,
                                  std::atomic<int64_t>& trips) {
    Waiter me;
    me.commands = &commands;
    me.deadline = deadline;
    std::unique_lock lock(queue_mutex_);
    queue_.push_back(&me);
    while (!me.done) {
      if (me.taken) {
        // In a batch being sent, whose deadline is the latest of its calls': this call
        // waits for its answer no longer than its own. It leaves the batch, whose sender
        // then no longer touches it (and reads and drops its replies).
        if (me.wake.wait_until(lock, deadline) == std::cv_status::timeout && !me.done) {
          (*me.batch)[me.slot].waiter = nullptr;
          return timedOut();
        }
        continue;
      }
      if (in_flight_ < kBatchesInFlight) {
        // The queued call with the most time left sends the batch: the batch's deadline is
        // its own, so it never waits past it (nor does any other call, see above).
        Waiter* leader = nextLeader();
        if (leader == &me) {
          lead(lock, trips);
          continue;
        }
        leader->wake.notify_one();
      }
      if (me.wake.wait_until(lock, deadline) == std::cv_status::timeout && !me.done && !me.taken) {
        queue_.erase(std::find(queue_.begin(), queue_.end(), &me));
        // Woken to send the next batch just as it timed out: another sends it.
        if (in_flight_ < kBatchesInFlight && !queue_.empty()) nextLeader()->wake.notify_one();
        return timedOut();
      }
    }
    return std::move(me.result);
  }

 private:
  struct Waiter;
  // A call's place in a batch; waiter null once the call gave up (and is gone).
  struct Slot {
    Waiter* waiter;
    bool sent = false;
    size_t replies = 0;
  };
  struct Waiter {
    const std::vector<Command>* commands = nullptr;
    Deadline deadline{};
    Result<std::vector<Reply>> result = std::vector<Reply>{};
    bool taken = false;                  // in a batch being sent: its answer will come
    bool done = false;                   // result is set
    std::vector<Slot>* batch = nullptr;  // once taken, the batch and its place in it
    size_t slot = 0;
    std::condition_variable wake;
  };

  Error timedOut() const { return Error::failure("redis " + address_.text() + ": timed out"); }

  // The queued call with the latest deadline (the last of equals); queue_ not empty.
  Waiter* nextLeader() const {
    Waiter* best = queue_.front();
    for (Waiter* w : queue_) {
      if (w->deadline >= best->deadline) best = w;
    }
    return best;
  }

  // Ends a batch however lead() leaves (an exception too): every call of it not answered
  // gets `failure`, the batch no longer counts as in flight, and the next batch may go.
  struct BatchEnd {
    Node& node;
    std::unique_lock<std::mutex>& lock;
    const std::vector<Slot>& batch;
    Error failure;
    ~BatchEnd() {
      if (!lock.owns_lock()) lock.lock();
      for (const Slot& s : batch) {
        Waiter* w = s.waiter;
        if (w == nullptr || w->done) continue;
        w->result = failure;
        w->done = true;
        w->wake.notify_one();
      }
      --node.in_flight_;
      if (node.in_flight_ < kBatchesInFlight && !node.queue_.empty()) {
        node.nextLeader()->wake.notify_one();
      }
    }
  };

  // Takes every queued call and runs them in one pipeline; `lock` held on entry and exit.
  void lead(std::unique_lock<std::mutex>& lock, std::atomic<int64_t>& trips) {
    ++in_flight_;
    std::vector<Slot> batch;
    batch.reserve(queue_.size());
    Deadline latest = Deadline::min();
    for (Waiter* w : queue_) {
      w->taken = true;
      w->batch = &batch;
      w->slot = batch.size();
      batch.push_back({w});
      latest = std::max(latest, w->deadline);
    }
    queue_.clear();
    BatchEnd end{*this, lock, batch, Error::failure("redis " + address_.text() + ": failed")};
    lock.unlock();
    auto connection = acquire(latest);
    lock.lock();
    if (!connection) {
      end.failure = connection.error();
      return;
    }
    // The commands are copied into the connection's buffer now, under the lock: a call that
    // gives up afterwards may free its own. A call whose time is gone is not sent at all
    // (Redis would charge it, and no one would read the answer).
    bool any = false;
    const auto now = std::chrono::steady_clock::now();
    for (Slot& s : batch) {
      Waiter* w = s.waiter;
      if (w == nullptr) continue;
      if (w->deadline <= now) {
        w->result = timedOut();
        w->done = true;
        w->wake.notify_one();
        s.waiter = nullptr;  // answered: it may return (and be gone) once the lock is free
        continue;
      }
      (*connection)->append(*w->commands);
      s.sent = true;
      s.replies = w->commands->size();
      any = true;
    }
    if (!any) {
      // nothing appended: the connection is as it was
      release(std::move(*connection));
      return;
    }
    lock.unlock();
    trips.fetch_add(1, std::memory_order_relaxed);
    auto replies = (*connection)->exchange(latest);
    release(std::move(*connection));
    lock.lock();
    if (!replies) {
      end.failure = replies.error();
      return;
    }
    size_t at = 0;
    for (Slot& s : batch) {
      if (!s.sent) continue;
      if (s.waiter != nullptr) {
        auto first = replies->begin() + static_cast<ptrdiff_t>(at);
        auto last = first + static_cast<ptrdiff_t>(s.replies);
        s.waiter->result =
            std::vector<Reply>(std::make_move_iterator(first), std::make_move_iterator(last));
        s.waiter->done = true;
        s.waiter->wake.notify_one();
        s.waiter = nullptr;
      }
      at += s.replies;
    }
  }

  Result<std::unique_ptr<Connection>> acquire(Deadline deadline) {
    {
      std::lock_guard lock(mutex_);
      if (!idle_.empty()) {
        auto c = std::move(idle_.back());
        idle_.pop_back();
        return c;
      }
    }
    return Connection::open(address_, deadline, credentials_);
  }

  void release(std::unique_ptr<Connection> connection) {
    if (connection->broken()) {
      // A lost connection: the server likely went away, and its other idle connections are
      // dead too. A timeout says only that the server is slow: the others stay.
      if (!connection->timedOut()) {
        std::lock_guard lock(mutex_);
        idle_.clear();
      }
      return;
    }
    std::lock_guard lock(mutex_);
    if (idle_.size() < max_idle_) idle_.push_back(std::move(connection));
  }

  Address address_;
  size_t max_idle_;
  Credentials credentials_;
  std::mutex mutex_;  // idle_
  std::vector<std::unique_ptr<Connection>> idle_;
  std::mutex queue_mutex_;  // queue_, in_flight_ and the waiters' fields
  std::vector<Waiter*> queue_;
  int in_flight_ = 0;  // batches sent and not yet answered
};

Client::Client(ClientOptions options) : options_(std::move(options)) {
  slots_.fill(-1);
  for (const Address& seed : options_.seeds) nodeFor(seed);
  if (!options_.cluster) {
    slots_.fill(0);  // one server owns every slot
    slots_known_ = true;
  }
}

Client::~Client() = default;

size_t Client::waitingCalls() {
  std::shared_lock lock(topology_);
  size_t n = 0;
  for (auto& node : nodes_) n += node->waiting();
  return n;
}

Deadline Client::deadline() const {
  return std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.timeout_ms);
}

Client::Node& Client::nodeFor(const Address& address) {
  for (auto& node : nodes_) {
    if (node->address() == address) return *node;
  }
  nodes_.push_back(std::make_unique<Node>(address, static_cast<size_t>(options_.pool_size),
                                          options_.credentials));
  return *nodes_.back();
}

Result<std::vector<Reply>> Client::pipelineOn(Node& node, const std::vector<Command>& commands,
                                              Deadline deadline) {
  return node.call(commands, deadline, round_trips_);
}

Result<void> Client::refreshSlots(Deadline deadline) {
  std::vector<Node*> candidates;
  {
    std::shared_lock lock(topology_);
    for (auto& node : nodes_) candidates.push_back(node.get());
  }
  std::string last_error = "no cluster node is known";
  for (Node* node : candidates) {
    auto replies = pipelineOn(*node, {{"CLUSTER", "SLOTS"}}, deadline);
    if (!replies) {
      last_error = replies.error().message;
      continue;
    }
    const Reply& reply = (*replies)[0];
    if (reply.type != Reply::Type::kArray) {
      last_error = "redis " + node->address().text() + ": CLUSTER SLOTS: " + reply.str;
      continue;
    }
    std::unique_lock lock(topology_);
    slots_.fill(-1);
    for (const Reply& range : reply.elements) {
      // [start, end, [host, port, id], replicas...]: the first address is the master. A
      // range of another shape, or past the slots there are, is left out: a node that
      // answers nonsense must not keep this lock (and every caller) in a loop.
      if (range.elements.size() < 3 || range.elements[2].elements.size() < 2) continue;
      const Reply& start = range.elements[0];
      const Reply& end = range.elements[1];
      const Reply& master = range.elements[2];
      if (start.type != Reply::Type::kInteger || end.type != Reply::Type::kInteger ||
          master.elements[0].type != Reply::Type::kString ||
          master.elements[1].type != Reply::Type::kInteger || start.integer < 0 ||
          end.integer >= static_cast<int64_t>(kSlots) || start.integer > end.integer) {
        continue;
      }
      Address address{master.elements[0].str, static_cast<int>(master.elements[1].integer)};
      if (address.host.empty()) address.host = node->address().host;
      nodeFor(address);
      auto index = static_cast<int16_t>(
          std::find_if(nodes_.begin(), nodes_.end(),
                       [&](const auto& n) { return n->address() == address; }) -
          nodes_.begin());
      for (int64_t s = start.integer; s <= end.integer; ++s) slots_[s] = index;
    }
    slots_known_ = true;
    return {};
  }
  return Error::failure(last_error);
}

Result<Reply> Client::redirect(const RoutedCommand& command, Reply reply, Deadline deadline) {
  for (int hop = 0; hop < 3; ++hop) {
    bool ask = reply.isError("ASK ");
    if (!ask && !reply.isError("MOVED ")) return reply;
    // "MOVED 3999 127.0.0.1:6381": the slot lives there now (ASK: only for this command).
    size_t space = reply.str.rfind(' ');
    auto address = Address::parse(reply.str.substr(space + 1));
    if (!address) return Error::failure("redis: bad redirection '" + reply.str + "'");
    Node* node;
    {
      std::unique_lock lock(topology_);
      node = &nodeFor(*address);
      if (!ask) {
        auto index =
            static_cast<int16_t>(std::find_if(nodes_.begin(), nodes_.end(),
                                              [&](const auto& n) { return n.get() == node; }) -
                                 nodes_.begin());
        slots_[keySlot(command.key)] = index;
      }
    }
    std::vector<Command> commands;
    if (ask) commands.push_back({"ASKING"});
    commands.push_back(command.command);
    auto replies = pipelineOn(*node, commands, deadline);
    if (!replies) return replies.error();
    reply = std::move(replies->back());
  }
  return reply;
}

Result<std::vector<Reply>> Client::run(const std::vector<RoutedCommand>& commands) {
  return run(commands, deadline());
}

namespace {
thread_local int64_t t_calls = 0;
}  // namespace

int64_t Client::callsOnThisThread() { return t_calls; }

Result<std::vector<Reply>> Client::run(const std::vector<RoutedCommand>& commands,
                                       Deadline deadline) {
  ++t_calls;
  bool known;
  {
    std::shared_lock lock(topology_);
    if (nodes_.empty()) return Error::failure("redis: no server address configured");
    known = slots_known_;
  }
  if (!known) {
    if (auto refreshed = refreshSlots(deadline); !refreshed) return refreshed.error();
  }
  // Group by server, keeping each command's place in the answer.
  std::map<Node*, std::vector<size_t>> groups;
  {
    std::shared_lock lock(topology_);
    for (size_t i = 0; i < commands.size(); ++i) {
      int16_t index = slots_[keySlot(commands[i].key)];
      if (index < 0) index = 0;  // an uncovered slot: any node will redirect us
      groups[nodes_[index].get()].push_back(i);
    }
  }
  std::vector<Reply> replies(commands.size());
  bool moved = false;
  for (auto& [node, indices] : groups) {
    std::vector<Command> batch;
    batch.reserve(indices.size());
    for (size_t i : indices) batch.push_back(commands[i].command);
    auto got = pipelineOn(*node, batch, deadline);
    if (!got) return got.error();
    for (size_t j = 0; j < indices.size(); ++j) {
      Reply& reply = (*got)[j];
      if (reply.isError("MOVED ") || reply.isError("ASK ")) {
        moved = moved || reply.isError("MOVED ");
        auto followed = redirect(commands[indices[j]], std::move(reply), deadline);
        if (!followed) return followed.error();
        replies[indices[j]] = std::move(*followed);
      } else {
        replies[indices[j]] = std::move(reply);
      }
    }
  }
  // Slots moved (resharding, failover): relearn the whole map on the next call.
  if (moved && options_.cluster) {
    std::unique_lock lock(topology_);
    slots_known_ = false;
  }
  return replies;
}

}  // namespace floodgate::http::redis
