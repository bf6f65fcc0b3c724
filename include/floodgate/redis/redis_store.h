// SPDX-License-Identifier: MIT
// RedisStore: one policy's per-key state in Redis (a server or a cluster), shared by a fleet.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "floodgate/core/algorithm.h"
#include "floodgate/redis/client.h"
#include "floodgate/redis/scripts.h"
#include "floodgate/stores/store.h"

namespace floodgate::http {

struct RedisStoreOptions {
  std::string prefix = "fg";  // every Redis key starts with it
  // Tests only: send decide()'s now_ns to the scripts instead of their reading Redis TIME,
  // so a Redis decision can be compared exactly with the in-memory one at the same instant.
  // Key expiry still runs on Redis's real clock: virtual time must not run slower than it.
  bool virtual_time = false;
  // A sync store's (SyncStore): a token bucket's or GCRA's units used beyond its capacity
  // are the debt its syncs recorded (the fleet admitted more than the bucket held), which a
  // decision keeps; otherwise they are read as a lowered capacity's and capped at it.
  bool keeps_debt = false;
  // Every key is written as "sha1:" and its SHA1, short or not: for keys that are secrets
  // or identities (an API key header, a user id), so whoever can read Redis (a replica, a
  // backup, MONITOR, a key listing) does not read them there. Hashing costs a decision
  // about a microsecond at most, beside its round trip.
  bool hide_keys = false;
};

// Each decision is one FCALL of the algorithm's function, or one for all of a request's
// policies (decideAtomically) (see evalAll for servers without functions): read,
// decide, write and set the expiry atomically, on Redis's own clock. A key's Redis keys are
// "<prefix>:{<policy>:<key>}:<part>"; the braces are a hash tag, so all of a key's parts (a log and
// its sequence) sit in one cluster slot. <part> is "log" and "seq" for the sliding log, and
// "<algorithm>:v3" for the others, whose state is one string of packed integers (it was text
// under "<algorithm>:v2", GCRA's under "gcra", and a hash before that, under the name alone:
// none of which this version reads, nor an older one this one's). Keys longer than 200 bytes, and
// keys that start with "sha1:", are replaced by "sha1:" and their SHA1 (stable across the
// fleet), so no key a client sends names another's hashed one; with hide_keys every key is. Times
// in the answer are Redis's, in µs, converted to ns. Thread-safe.
class RedisStore final : public Store {
 public:
  RedisStore(std::shared_ptr<redis::Client> client, std::string policy,
             const AlgorithmParams& params, RedisStoreOptions options = {});

  Result<Decision> decide(std::string_view key, int64_t now_ns, int64_t cost) override;
  // Best effort: a refund that fails leaves the units used until the state expires.
  void refund(std::string_view key, int64_t admitted_ns, int64_t now_ns, int64_t cost) override;

  // The longest key written as it is (a longer one is written as its hash).
  static constexpr size_t kMaxKeyBytes = 200;
  // `key` if it is short, not of the hashed form and has no brace (which would end the hash
  // tag the key is written in), else "sha1:" and its SHA1 in hex,
  // written to `scratch`: the bound on what a client-chosen key makes Redis, or a store
  // that keeps keys in front of it, hold. The same on every instance of a fleet.
  static std::string_view boundedKey(std::string_view key, std::string& scratch);
  // "sha1:" and the SHA1 of `key` in hex, whatever `key` is (see hide_keys).
  static std::string hiddenKey(std::string_view key);

  // One request of a batch.
  struct Request {
    std::string_view key;
    int64_t cost = 1;
    int64_t extra = 0;  // units to lease besides the cost (see decideScript)
  };
  // What a decision leased besides its cost, and when (Redis's clock, ns).
  struct Answer {
    Decision decision;
    int64_t leased = 0;
    int64_t redis_now_ns = 0;
    // Redis holds what an admitted decision took (a refund gives it back); false when it was
    // decided with others all or nothing and took nothing (see decideAtomically).
    bool charged = true;
  };
  // Decides every request in one pipeline per server: one round trip, not one each.
  // The outer error is a transport failure; a script error fails only its own request.
  Result<std::vector<Result<Answer>>> decideMany(const std::vector<Request>& requests,
                                                 int64_t now_ns);
  // Decides requests of several stores (one policy each) that share one client, in one
  // pipeline per server: a request's policies cost one round trip, not one each.
  struct Across {
    RedisStore* store;
    Request request;
  };
  static Result<std::vector<Result<Answer>>> decideAcross(const std::vector<Across>& items,
                                                          int64_t now_ns);
  // Decides requests of several stores that share one client (one request's policies) in
  // one script run, all or nothing (decideTogetherScript): if any refuses, none is charged,
  // atomically inside Redis, and each admitted answer says charged = false. With `charge`
  // false nothing is charged at all (the request is refused by a policy elsewhere). One
  // FCALL, where decideAcross sends one per policy. In a cluster whose slots the keys do
  // not share, it is decideAcross (each policy charged on its own; the caller refunds). The
  // first item's store says whether Redis's clock or now_ns is used. Errors as decideAcross.
  static Result<std::vector<Result<Answer>>> decideAtomically(const std::vector<Across>& items,
                                                              int64_t now_ns, bool charge);
  // Local buckets reconciled with Redis (see SyncStore): a key's units admitted locally
  // since its last sync, and the window (Redis's index) they were admitted in.
  struct SyncItem {
    std::string_view key;
    int64_t spent = 0;
    int64_t window_index = 0;
  };
  // What the fleet has left of a key after its units were added.
  struct Synced {
    int64_t remaining = 0;
    int64_t reset_ns = 0;
    int64_t redis_now_ns = 0;
  };
  // Adds every item's spent units to its key and reads what the fleet has left (syncScript):
  // one script per batch of keys in one cluster slot (on one server: per 256 keys), one
  // pipeline per server. `items` name distinct keys. The outer error is a transport failure.
  // fixed_window, token_bucket and gcra only (canLease).
  Result<std::vector<Result<Synced>>> sync(const std::vector<SyncItem>& items, int64_t now_ns);

  // Gives back `units` taken at `redis_at_ns` (a lease's unspent rest), at Redis's clock
  // (`now_ns`, our clock, under virtual_time): as refund(), only what has not refilled
  // since. Best effort.
  Status giveBack(std::string_view key, int64_t redis_at_ns, int64_t now_ns, int64_t units);

  // Runs commands made as EVALSHA of scripts[i] (one pipeline per server), as FCALL of the
  // same script in functionLibrary(). A call the server answers "Function not found" (a
  // restart, FUNCTION FLUSH, a new cluster node) is retried once, after FUNCTION LOAD
  // REPLACE of the library on its server in the same pipeline. A server without functions
  // (older than Redis 7: FCALL is an unknown command; or FUNCTION LOAD not allowed to the
  // user) makes the client run scripts from then on: EVALSHA, rerun as EVAL when the
  // server had not cached the script.
  static Result<std::vector<redis::Reply>> evalAll(
      redis::Client& client, std::vector<redis::RoutedCommand> commands,
      const std::vector<const redis::Script*>& scripts);

  redis::Client& client() { return *client_; }
  const std::shared_ptr<redis::Client>& sharedClient() const { return client_; }
  int64_t quota() const { return quota_; }
  const AlgorithmParams& algorithm() const { return params_; }

 private:
  std::vector<std::string> redisKeys(std::string_view key) const;
  std::vector<std::string> params() const;
  redis::RoutedCommand command(const redis::Script& script, std::string_view key,
                               std::string now_arg, int64_t cost, int64_t extra) const;
  redis::RoutedCommand decideCommand(const Request& request, int64_t now_ns) const;
  std::string nowArg(int64_t now_ns) const;
  Result<Answer> answer(const redis::Reply& reply, int64_t now_ns);

  std::shared_ptr<redis::Client> client_;
  std::string policy_;
  AlgorithmParams params_;
  RedisStoreOptions options_;
  int64_t quota_ = 0;
  // Redis's clock minus ours (ns) at the last answer: refunds name the request's window by
  // Redis's clock. Off by the round trip at most, which matters only at a window's edge.
  std::atomic<int64_t> clock_offset_ns_{0};
};

}  // namespace floodgate::http
