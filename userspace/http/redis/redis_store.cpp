// SPDX-License-Identifier: MIT
// Deciding through Redis functions: build FCALL commands (or EVALSHA), read the answers.
#include "floodgate/redis/redis_store.h"

#include <algorithm>
#include <cstdint>
#include <map>

#include "floodgate/redis/scripts.h"

namespace floodgate::http {

namespace {

constexpr int64_t kNsPerUs = 1000;
constexpr std::string_view kHashedKeyMark = "sha1:";  // then the SHA1 of the key, in hex

// Whether elements [from, to) of `reply` are integers a count of microseconds may be (so
// that one in nanoseconds does not overflow). A reply of another shape (nils, text, from
// a Redis or a proxy that is not what it should be) is a store failure, which the policy's
// failure_mode handles, never an admission: an integer field that is absent reads 0.
bool microsecondsAt(const redis::Reply& reply, size_t from, size_t to) {
  constexpr int64_t kMost = INT64_MAX / kNsPerUs;
  for (size_t i = from; i < to; ++i) {
    const redis::Reply& e = reply.elements[i];
    if (e.type != redis::Reply::Type::kInteger || e.integer > kMost || e.integer < -kMost) {
      return false;
    }
  }
  return true;
}

Result<RedisStore::Answer> readAnswer(const redis::Reply& reply, int64_t quota) {
  if (reply.isError()) return Error::failure("redis script failed: " + reply.str);
  if (reply.type != redis::Reply::Type::kArray || reply.elements.size() != 7 ||
      !microsecondsAt(reply, 0, 7) || reply.elements[0].integer < 0 ||
      reply.elements[0].integer > 2) {
    return Error::failure("redis script answered something unexpected");
  }
  auto at = [&](size_t i) { return reply.elements[i].integer; };
  RedisStore::Answer a;
  a.decision.outcome = at(0) == 0   ? Outcome::kAllowed
                       : at(0) == 2 ? Outcome::kCostExceedsBurst
                                    : Outcome::kRejected;
  a.decision.delay_ns = at(1) * kNsPerUs;
  a.decision.limit = quota;
  a.decision.remaining = at(2);
  a.decision.reset_ns = at(3) * kNsPerUs;
  a.decision.retry_after_ns = at(4) * kNsPerUs;
  a.redis_now_ns = at(5) * kNsPerUs;
  a.leased = at(6);
  return a;
}

}  // namespace

RedisStore::RedisStore(std::shared_ptr<redis::Client> client, std::string policy,
                       const AlgorithmParams& params, RedisStoreOptions options)
    : client_(std::move(client)),
      policy_(std::move(policy)),
      params_(params),
      options_(std::move(options)) {
  quota_ = isWindowAlgorithm(params.kind) ? params.limit : params.capacity;
}

std::string_view RedisStore::boundedKey(std::string_view key, std::string& scratch) {
  // A key that itself starts as a hashed one does is hashed too, so no client can name the
  // state of a client whose long key was hashed (it would take a SHA1 collision).
  // A brace would end the "{...}" hash tag early: "x}1", "x}2", ... would all be tagged
  // "policy:x" and land in one cluster slot, the attacker's choice. Hashed, they spread.
  if (key.size() <= kMaxKeyBytes && !key.starts_with(kHashedKeyMark) &&
      key.find_first_of("{}") == std::string_view::npos) {
    return key;
  }
  scratch = hiddenKey(key);
  return scratch;
}

std::string RedisStore::hiddenKey(std::string_view key) {
  return std::string(kHashedKeyMark) + redis::sha1Hex(key);
}

std::vector<std::string> RedisStore::redisKeys(std::string_view key) const {
  // Keys are client-chosen (an API key header): bound what one can make Redis store.
  std::string scratch;
  std::string base = options_.prefix + ":{" + policy_ + ":";
  base += options_.hide_keys ? hiddenKey(key) : boundedKey(key, scratch);
  base += "}";
  if (params_.kind == AlgorithmKind::kSlidingWindowLog) return {base + ":log", base + ":seq"};
  // named after the algorithm: a policy that changes algorithm starts its keys fresh (its
  // old state means nothing to the new one, and may be another Redis type), and after the
  // state's format: ":v3", packed integers (scripts.cpp), where an older fleet keeps text
  // ("...:v2", and GCRA's without a suffix) or, before that, hashes. Instances of two
  // versions in one fleet never read each other's state; the old keys expire on their own.
  return {base + ":" + std::string(algorithmName(params_.kind)) + ":v3"};
}

std::vector<std::string> RedisStore::params() const {
  if (isWindowAlgorithm(params_.kind)) {
    return {std::to_string(params_.limit), std::to_string(params_.window_ms * 1000)};
  }
  int64_t rate_milli = rateMilliPerS(params_.rate_per_s);
  // The in-memory interval rounded up to whole µs: never faster than the rate.
  int64_t interval_us = ceilDiv(1'000'000'000, rate_milli);
  return {std::to_string(params_.capacity), std::to_string(rate_milli), std::to_string(interval_us),
          params_.kind == AlgorithmKind::kLeakyBucket ? "queue" : "gcra"};
}

redis::RoutedCommand RedisStore::command(const redis::Script& script, std::string_view key,
                                         std::string now_arg, int64_t cost, int64_t extra) const {
  std::vector<std::string> keys = redisKeys(key);
  redis::RoutedCommand rc;
  rc.key = keys[0];
  rc.command = {"EVALSHA", script.sha1, std::to_string(keys.size())};
  for (std::string& k : keys) rc.command.push_back(std::move(k));
  rc.command.push_back(std::move(now_arg));
  rc.command.push_back(std::to_string(cost));
  rc.command.push_back(std::to_string(extra));
  for (std::string& p : params()) rc.command.push_back(std::move(p));
  return rc;
}

namespace {

// Errors that say the server is busy or moving, not that it lacks functions: the same
// command will do once it is back, and scripts would fail alike.
bool transient(const redis::Reply& reply) {
  for (std::string_view prefix : {"BUSY", "LOADING", "OOM", "READONLY", "MASTERDOWN", "CLUSTERDOWN",
                                  "TRYAGAIN", "MOVED ", "ASK ", "NOSCRIPT"}) {
    if (reply.isError(prefix)) return true;
  }
  return false;
}

// FCALL refused as a command, not failed inside the function: a server older than Redis 7
// ("ERR unknown command 'FCALL'"), a user not allowed it ("NOPERM ..."), a proxy that does
// not pass it on ("ERR unsupported command", "... fcall ..."). An error a function raised
// names where it was raised ("... on @user_function:12."); it is that request's own answer.
bool fcallRefused(const redis::Reply& reply) {
  if (!reply.isError() || reply.isError("ERR Function not found") || transient(reply)) return false;
  return reply.str.find("@user_function") == std::string::npos;
}

// EVALSHA commands, as made (the scripts' sha1), after the server had not cached them:
// rerun as EVAL with the script's body, which also caches it.
Result<std::vector<redis::Reply>> evalWithScripts(redis::Client& client,
                                                  std::vector<redis::RoutedCommand> commands,
                                                  const std::vector<const redis::Script*>& scripts,
                                                  redis::Deadline deadline) {
  auto replies = client.run(commands, deadline);
  if (!replies) return replies;
  // A server that restarted (or a new cluster node) has an empty script cache.
  std::vector<redis::RoutedCommand> retry;
  std::vector<size_t> where;
  for (size_t i = 0; i < replies->size(); ++i) {
    if (!(*replies)[i].isError("NOSCRIPT")) continue;
    redis::RoutedCommand rc = std::move(commands[i]);
    rc.command[0] = "EVAL";
    rc.command[1] = scripts[i]->body;
    retry.push_back(std::move(rc));
    where.push_back(i);
  }
  if (retry.empty()) return replies;
  auto again = client.run(retry, deadline);
  if (!again) return again.error();
  for (size_t j = 0; j < where.size(); ++j) (*replies)[where[j]] = std::move((*again)[j]);
  return replies;
}

}  // namespace

Result<std::vector<redis::Reply>> RedisStore::evalAll(
    redis::Client& client, std::vector<redis::RoutedCommand> commands,
    const std::vector<const redis::Script*>& scripts) {
  redis::Deadline deadline = client.deadline();
  if (client.scriptsOnly()) return evalWithScripts(client, std::move(commands), scripts, deadline);
  // The same arguments after the name: FCALL <function> <numkeys> <keys...> <args...>.
  std::vector<redis::RoutedCommand> calls = commands;
  for (size_t i = 0; i < calls.size(); ++i) {
    calls[i].command[0] = "FCALL";
    calls[i].command[1] = scripts[i]->function;
  }
  auto replies = client.run(calls, deadline);
  if (!replies) return replies;
  // A server that restarted empty, or whose functions were flushed (FUNCTION FLUSH), or a
  // new cluster node: the library is loaded on the server of each call that missed it (in
  // the same pipeline, just before the call again), once, and the call retried once.
  std::vector<size_t> refused;  // calls to run as scripts: their server has no functions
  for (size_t i = 0; i < replies->size(); ++i) {
    if (fcallRefused((*replies)[i])) refused.push_back(i);
  }
  std::vector<redis::RoutedCommand> retry;
  std::vector<size_t> where;
  std::vector<uint16_t> loaded_slots;
  for (size_t i = 0; i < replies->size(); ++i) {
    if (!(*replies)[i].isError("ERR Function not found")) continue;
    if (!refused.empty()) {
      // scripts from now on: no library to load
      refused.push_back(i);
      continue;
    }
    uint16_t slot = redis::keySlot(calls[i].key);
    if (std::find(loaded_slots.begin(), loaded_slots.end(), slot) == loaded_slots.end()) {
      loaded_slots.push_back(slot);
      retry.push_back(
          {calls[i].key, {"FUNCTION", "LOAD", "REPLACE", redis::functionLibrary().code}});
      where.push_back(SIZE_MAX);
    }
    retry.push_back(std::move(calls[i]));
    where.push_back(i);
  }
  if (!retry.empty()) {
    auto again = client.run(retry, deadline);
    if (!again) return again.error();
    for (size_t j = 0; j < where.size(); ++j) {
      // A load's own answer: a server that would not load the library (FUNCTION not allowed
      // to this user, a proxy that does not pass it on, a library it rejects) answers the
      // call after it "Function not found" again, and that call goes to scripts.
      if (where[j] == SIZE_MAX) continue;
      redis::Reply& reply = (*again)[j];
      if (reply.isError("ERR Function not found") || fcallRefused(reply)) {
        refused.push_back(where[j]);  // it ran nothing
        continue;
      }
      (*replies)[where[j]] = std::move(reply);
    }
  }
  if (refused.empty()) return replies;
  client.useScriptsOnly();
  // Only the calls that ran nothing: the others were answered (and charged) already.
  std::vector<redis::RoutedCommand> rerun;
  std::vector<const redis::Script*> rerun_scripts;
  for (size_t i : refused) {
    rerun.push_back(std::move(commands[i]));
    rerun_scripts.push_back(scripts[i]);
  }
  auto by_scripts = evalWithScripts(client, std::move(rerun), rerun_scripts, deadline);
  if (!by_scripts) return by_scripts.error();
  for (size_t j = 0; j < refused.size(); ++j) (*replies)[refused[j]] = std::move((*by_scripts)[j]);
  return replies;
}

std::string RedisStore::nowArg(int64_t now_ns) const {
  return options_.virtual_time ? std::to_string(now_ns / kNsPerUs) : "";
}

redis::RoutedCommand RedisStore::decideCommand(const Request& r, int64_t now_ns) const {
  // extra < 0 tells a bucket's script to keep a sync's debt (it leases nothing then)
  const bool debt = options_.keeps_debt && (params_.kind == AlgorithmKind::kTokenBucket ||
                                            params_.kind == AlgorithmKind::kGcra);
  const int64_t extra = debt ? -1 : canLease(params_.kind) ? r.extra : 0;
  return command(redis::decideScript(params_.kind), r.key, nowArg(now_ns), r.cost, extra);
}

Result<RedisStore::Answer> RedisStore::answer(const redis::Reply& reply, int64_t now_ns) {
  Result<Answer> a = readAnswer(reply, quota_);
  if (a) clock_offset_ns_.store(a->redis_now_ns - now_ns, std::memory_order_relaxed);
  return a;
}

Result<std::vector<Result<RedisStore::Answer>>> RedisStore::decideMany(
    const std::vector<Request>& requests, int64_t now_ns) {
  std::vector<Across> items;
  items.reserve(requests.size());
  for (const Request& r : requests) items.push_back({this, r});
  return decideAcross(items, now_ns);
}

Result<std::vector<Result<RedisStore::Answer>>> RedisStore::decideAcross(
    const std::vector<Across>& items, int64_t now_ns) {
  if (items.empty()) return std::vector<Result<Answer>>{};
  std::vector<redis::RoutedCommand> commands;
  std::vector<const redis::Script*> scripts;
  commands.reserve(items.size());
  scripts.reserve(items.size());
  for (const Across& item : items) {
    commands.push_back(item.store->decideCommand(item.request, now_ns));
    scripts.push_back(&redis::decideScript(item.store->params_.kind));
  }
  auto replies = evalAll(*items[0].store->client_, std::move(commands), scripts);
  if (!replies) return replies.error();
  std::vector<Result<Answer>> answers;
  answers.reserve(replies->size());
  for (size_t i = 0; i < items.size(); ++i) {
    answers.push_back(items[i].store->answer((*replies)[i], now_ns));
  }
  return answers;
}

Result<std::vector<Result<RedisStore::Answer>>> RedisStore::decideAtomically(
    const std::vector<Across>& items, int64_t now_ns, bool charge) {
  if (items.empty()) return std::vector<Result<Answer>>{};
  const RedisStore& first = *items[0].store;
  const redis::Script& script = redis::decideTogetherScript();
  redis::RoutedCommand rc;
  rc.command = {"EVALSHA", script.sha1, ""};
  std::vector<std::string> args = {first.nowArg(now_ns), charge ? "1" : "0"};
  args.reserve(2 + 7 * items.size());
  const bool cluster = first.client_->options().cluster;
  for (const Across& item : items) {
    std::vector<std::string> keys = item.store->redisKeys(item.request.key);
    // A script's keys must share a slot in a cluster; a request's policies rarely do (each
    // key is its own hash tag, so that keys spread over the nodes): one script each then.
    // (A key's own parts share its hash tag, so its first key names its slot.)
    if (cluster && rc.command.size() > 3 &&
        redis::keySlot(keys[0]) != redis::keySlot(rc.command[3])) {
      return decideAcross(items, now_ns);
    }
    args.emplace_back(algorithmName(item.store->params_.kind));
    args.push_back(std::to_string(keys.size()));
    args.push_back(std::to_string(item.request.cost));
    std::vector<std::string> parameters = item.store->params();
    parameters.resize(4);
    for (std::string& p : parameters) args.push_back(std::move(p));
    for (std::string& k : keys) rc.command.push_back(std::move(k));
  }
  rc.key = rc.command[3];
  rc.command[2] = std::to_string(rc.command.size() - 3);
  for (std::string& a : args) rc.command.push_back(std::move(a));

  auto replies = evalAll(*first.client_, {std::move(rc)}, {&script});
  if (!replies) return replies.error();
  const redis::Reply& reply = (*replies)[0];
  if (reply.type != redis::Reply::Type::kArray || reply.elements.size() != 1 + items.size() ||
      !microsecondsAt(reply, 0, 1)) {
    Error error = Error::failure(reply.isError() ? "redis script failed: " + reply.str
                                                 : "redis script answered something unexpected");
    return std::vector<Result<Answer>>(items.size(), error);
  }
  const bool charged = reply.elements[0].integer == 1;
  std::vector<Result<Answer>> answers;
  answers.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    Result<Answer> a = items[i].store->answer(reply.elements[1 + i], now_ns);
    if (a && a->decision.allowed()) a->charged = charged;
    answers.push_back(std::move(a));
  }
  return answers;
}

Result<Decision> RedisStore::decide(std::string_view key, int64_t now_ns, int64_t cost) {
  auto answers = decideMany({Request{key, cost, 0}}, now_ns);
  if (!answers) return answers.error();
  Result<Answer>& answer = (*answers)[0];
  if (!answer) return answer.error();
  return answer->decision;
}

Result<std::vector<Result<RedisStore::Synced>>> RedisStore::sync(const std::vector<SyncItem>& items,
                                                                 int64_t now_ns) {
  constexpr size_t kKeysPerScript = 256;
  const redis::Script& script = redis::syncScript(params_.kind);
  std::vector<std::string> parameters = params();
  parameters.resize(3, "0");
  // Batches: the items' indexes, grouped by slot in a cluster (a script's keys must share
  // one), all together on a single server; at most kKeysPerScript each, so one script
  // never holds the server long.
  std::vector<std::vector<size_t>> batches;
  {
    std::map<uint16_t, std::vector<size_t>> by_slot;
    const bool cluster = client_->options().cluster;
    for (size_t i = 0; i < items.size(); ++i) {
      std::vector<size_t>& open = by_slot[cluster ? redis::keySlot(redisKeys(items[i].key)[0]) : 0];
      open.push_back(i);
      if (open.size() == kKeysPerScript) batches.push_back(std::move(open)), open.clear();
    }
    for (auto& [slot, rest] : by_slot) {
      if (!rest.empty()) batches.push_back(std::move(rest));
    }
  }
  std::vector<redis::RoutedCommand> commands;
  std::vector<const redis::Script*> scripts(batches.size(), &script);
  std::string now_arg = options_.virtual_time ? std::to_string(now_ns / kNsPerUs) : "";
  for (const std::vector<size_t>& batch : batches) {
    redis::RoutedCommand rc;
    rc.command = {"EVALSHA", script.sha1, std::to_string(batch.size())};
    for (size_t i : batch) rc.command.push_back(redisKeys(items[i].key)[0]);
    rc.key = rc.command[3];
    rc.command.push_back(now_arg);
    for (const std::string& p : parameters) rc.command.push_back(p);
    for (size_t i : batch) {
      rc.command.push_back(std::to_string(items[i].spent));
      rc.command.push_back(std::to_string(items[i].window_index));
    }
    commands.push_back(std::move(rc));
  }
  auto replies = evalAll(*client_, std::move(commands), scripts);
  if (!replies) return replies.error();
  std::vector<Result<Synced>> out(items.size(), Error::failure("not synced"));
  for (size_t b = 0; b < batches.size(); ++b) {
    const redis::Reply& reply = (*replies)[b];
    if (reply.type != redis::Reply::Type::kArray ||
        reply.elements.size() != 1 + 2 * batches[b].size() ||
        !microsecondsAt(reply, 0, reply.elements.size())) {
      Error error = Error::failure(reply.isError() ? "redis sync failed: " + reply.str
                                                   : "redis sync answered something unexpected");
      for (size_t i : batches[b]) out[i] = error;
      continue;
    }
    const int64_t redis_now_ns = reply.elements[0].integer * kNsPerUs;
    // a sync's reading of Redis's clock, as a decision's: what a refund's time is turned
    // into (a store that syncs may never decide in Redis, and its refunds would name time 0)
    clock_offset_ns_.store(redis_now_ns - now_ns, std::memory_order_relaxed);
    for (size_t j = 0; j < batches[b].size(); ++j) {
      out[batches[b][j]] = Synced{reply.elements[1 + 2 * j].integer,
                                  reply.elements[2 + 2 * j].integer * kNsPerUs, redis_now_ns};
    }
  }
  return out;
}

Status RedisStore::giveBack(std::string_view key, int64_t redis_at_ns, int64_t now_ns,
                            int64_t units) {
  const redis::Script& script = redis::refundScript(params_.kind);
  // The refund's "now": Redis's clock (-1), or under virtual time ours.
  const int64_t at_us = redis_at_ns / kNsPerUs;
  auto replies = evalAll(*client_,
                         {command(script, key, std::to_string(at_us), units,
                                  options_.virtual_time ? now_ns / kNsPerUs : -1)},
                         {&script});
  if (!replies) return replies.error();
  if ((*replies)[0].isError()) return Error::failure("redis refund failed: " + (*replies)[0].str);
  return {};
}

void RedisStore::refund(std::string_view key, int64_t admitted_ns, int64_t now_ns, int64_t cost) {
  int64_t redis_ns = options_.virtual_time
                         ? admitted_ns
                         : admitted_ns + clock_offset_ns_.load(std::memory_order_relaxed);
  (void)giveBack(key, redis_ns, now_ns, cost);
}

}  // namespace floodgate::http
