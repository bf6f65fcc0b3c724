// SPDX-License-Identifier: MIT
// The stream's reading thread: a script reads the entries after the last one, with Redis's
// clock to age them, in a loop (at once while a batch comes full, else every kPollMs); a
// lost Redis is logged once and retried every second.
#include "daemon/stream_tail.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstring>
#include <optional>
#include <utility>

#include "daemon/log.h"
#include "floodgate/common/text.h"
#include "floodgate/redis/redis_store.h"
#include "floodgate/redis/scripts.h"

namespace floodgate::daemon {
namespace {

namespace redis = http::redis;

// Not XREAD BLOCK: it would send an entry whatever its size, and one huge entry, written by
// anyone who can write the stream, would stall every reader (retried from the same ID) or
// swamp its memory. The script sends such an entry as its ID alone (streamReadScript).
constexpr int64_t kPollMs = 200;
constexpr int64_t kRetryMs = 1000;
constexpr int64_t kSliceMs = 100;

// Redis's clock from a TIME reply ([seconds, microseconds]).
Result<int64_t> timeReplyMs(const redis::Reply& reply) {
  int64_t seconds = 0, micros = 0;
  if (reply.type != redis::Reply::Type::kArray || reply.elements.size() != 2 ||
      std::from_chars(reply.elements[0].str.data(),
                      reply.elements[0].str.data() + reply.elements[0].str.size(), seconds)
              .ec != std::errc() ||
      std::from_chars(reply.elements[1].str.data(),
                      reply.elements[1].str.data() + reply.elements[1].str.size(), micros)
              .ec != std::errc()) {
    return Error::failure("TIME did not answer with the time");
  }
  return seconds * 1000 + micros / 1000;
}

// An entry ID ("MS-SEQ") as numbers, in the stream's order.
std::pair<uint64_t, uint64_t> idParts(const std::string& id) {
  uint64_t ms = 0, seq = 0;
  const size_t dash = id.find('-');
  if (dash == std::string::npos) return {0, 0};
  std::from_chars(id.data(), id.data() + dash, ms);
  std::from_chars(id.data() + dash + 1, id.data() + id.size(), seq);
  return {ms, seq};
}

// The ID just after `id` in the stream's order, where a read after `id` starts; none after
// the largest ID there is (an entry may be given it, and nothing can follow it).
std::optional<std::string> idAfter(const std::string& id) {
  const auto [ms, seq] = idParts(id);
  if (seq < UINT64_MAX) return std::to_string(ms) + "-" + std::to_string(seq + 1);
  if (ms < UINT64_MAX) return std::to_string(ms + 1) + "-0";
  return std::nullopt;
}

// The ID just before `id` in the stream's order, so that a read after it starts at `id`.
std::string idBefore(const std::string& id) {
  const auto [ms, seq] = idParts(id);
  if (seq > 0) return std::to_string(ms) + "-" + std::to_string(seq - 1);
  if (ms == 0) return "0-0";
  return std::to_string(ms - 1) + "-" + std::to_string(UINT64_MAX);
}

TailEntry replayEnd(int64_t now_ms) {
  TailEntry end;
  end.now_ms = now_ms;
  end.replay_end = true;
  return end;
}

}  // namespace

bool StreamTailSource::operator==(const StreamTailSource& other) const {
  return client.seeds == other.client.seeds && client.cluster == other.client.cluster &&
         client.credentials == other.client.credentials && stream == other.stream &&
         lookback_ns == other.lookback_ns && what == other.what && max_replay == other.max_replay;
}

Result<std::unique_ptr<StreamTail>> StreamTail::start(StreamTailSource source) {
  UniqueFd event(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!event.valid()) {
    return Error::failure(std::string("cannot make an eventfd: ") + std::strerror(errno));
  }
  std::unique_ptr<StreamTail> tail(new StreamTail(std::move(source), std::move(event)));
  tail->thread_ = std::thread([t = tail.get()] { t->run(); });
  return tail;
}

StreamTail::StreamTail(StreamTailSource source, UniqueFd event)
    : source_(std::move(source)), event_(std::move(event)), client_(source_.client) {}

StreamTail::~StreamTail() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

std::vector<TailEntry> StreamTail::drain(size_t max) {
  std::vector<TailEntry> out;
  std::lock_guard lock(mutex_);
  uint64_t ignored = 0;
  if (read(event_.get(), &ignored, sizeof(ignored)) < 0) {
    // EAGAIN: nothing was signalled; the queue may still hold what the last drain left
  }
  while (!queue_.empty() && out.size() < max) {
    out.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  if (!queue_.empty()) {
    const uint64_t one = 1;  // more wait: stay readable for the next poll
    if (write(event_.get(), &one, sizeof(one)) < 0) {
    }
  }
  return out;
}

void StreamTail::sleepUnlessStopped(int64_t ms) {
  for (int64_t slept = 0; slept < ms && !stop_; slept += kSliceMs) {
    std::this_thread::sleep_for(std::chrono::milliseconds(kSliceMs));
  }
}

void StreamTail::run() {
  bool failing = false;
  struct Finished {
    std::atomic<bool>& flag;
    ~Finished() { flag = true; }
  } finished{finished_};
  while (!stop_) {
    bool full = false;
    {
      std::lock_guard lock(mutex_);
      full = queue_.size() >= kCapacity;
    }
    if (full) {  // the poll loop is behind: leave the rest in Redis for now
      sleepUnlessStopped(kSliceMs);
      continue;
    }
    Result<bool> read = readOnce();
    if (read && failing) {
      logInfo("reading " + source_.what + " from redis stream " + source_.stream + " again");
    } else if (!read && !failing) {
      logWarning("cannot read " + source_.what + " from redis stream " + source_.stream +
                 " (they wait in Redis; retrying every second from the last one read): " +
                 read.error().message);
    }
    failing = !read;
    // after a failed call (a timeout: entries that take Redis long to copy, which a writer
    // of the stream may make), one entry a call, then twice as many after each that works
    read_count_ = read ? std::min(kReadCount, read_count_ * 2) : 1;
    if (failing) {
      sleepUnlessStopped(kRetryMs);
    } else if (!*read) {
      sleepUnlessStopped(kPollMs);  // read up to the end: wait for more
    }
  }
}

Result<bool> StreamTail::readOnce() {
  const std::string& stream = source_.stream;
  if (last_id_.empty()) {
    auto time = client_.run({{stream, {"TIME"}}});
    if (!time) return time.error();
    auto now_ms = timeReplyMs((*time)[0]);
    if (!now_ms) return now_ms.error();
    const int64_t lookback_ms = static_cast<int64_t>(source_.lookback_ns / 1'000'000);
    last_id_ = std::to_string(std::max<int64_t>(0, *now_ms - lookback_ms)) + "-0";
    logInfo("taking " + source_.what + " from redis stream " + stream + " (signed by the fleet)");
    replaying_ = source_.max_replay > 0;
    replay_from_ = last_id_;
  }
  if (replaying_) {
    if (Status s = replayOnce(); !s) return s.error();
    return true;
  }
  const std::optional<std::string> first = idAfter(last_id_);
  if (!first) return readAgainIfBehind();
  const redis::Script& script = redis::streamReadScript();
  auto replies = http::RedisStore::evalAll(
      client_,
      {{stream,
        {"EVALSHA", script.sha1, "1", stream, *first, std::to_string(read_count_),
         std::to_string(redis::kStreamEntryMostBytes),
         std::to_string(redis::kStreamEntryMostFields)}}},
      {&script});
  if (!replies) return replies.error();
  const redis::Reply& result = (*replies)[0];
  if (result.isError()) return Error::failure(result.str);
  if (result.type != redis::Reply::Type::kArray || result.elements.size() != 2 ||
      result.elements[0].type != redis::Reply::Type::kInteger) {
    return Error::failure("the stream's read did not answer with the time and the entries");
  }
  const int64_t now_ms = result.elements[0].integer;
  const redis::Reply& entries = result.elements[1];  // [[id, [field, value, ...]], ...]
  std::vector<TailEntry> batch;
  if (entries.elements.empty()) {
    // nothing after last_id_: whatever of the past was left is gone (trimmed)
    if (!replay_until_.empty()) batch.push_back(replayEnd(now_ms));
    replay_until_.clear();
    hand(std::move(batch));
    // the last entry read is ahead of Redis's clock: not a publisher's, whose "*" IDs follow
    // that clock (or the stream's newest, past an entry such as this one)
    if (idParts(last_id_).first > static_cast<uint64_t>(now_ms)) return readAgainIfBehind();
    return false;
  }
  for (const redis::Reply& entry : entries.elements) {
    if (entry.elements.size() != 2) continue;
    const std::string& id = entry.elements[0].str;
    last_id_ = id;
    if (!replay_until_.empty() && idParts(id) > idParts(replay_until_)) {
      batch.push_back(replayEnd(now_ms));  // the newest of the past is gone (trimmed)
      replay_until_.clear();
    }
    batch.push_back({id, entry.elements[1], now_ms, !replay_until_.empty()});
    if (id == replay_until_) {
      batch.push_back(replayEnd(now_ms));
      replay_until_.clear();
    }
  }
  const bool full = entries.elements.size() >= read_count_;
  hand(std::move(batch));
  return full;
}

Result<std::string> StreamTail::newestId() {
  const redis::Script& script = redis::streamIdsBackScript();
  auto replies = http::RedisStore::evalAll(
      client_, {{source_.stream, {"EVALSHA", script.sha1, "1", source_.stream, "+", "-", "1"}}},
      {&script});
  if (!replies) return replies.error();
  const redis::Reply& ids = (*replies)[0];
  if (ids.isError()) return Error::failure(ids.str);
  if (ids.elements.empty()) return std::string();
  return ids.elements[0].str;
}

Result<bool> StreamTail::readAgainIfBehind() {
  const auto now = std::chrono::steady_clock::now();
  if (now < next_behind_check_) return false;
  next_behind_check_ = now + std::chrono::milliseconds(kBehindCheckMs);
  Result<std::string> newest = newestId();
  if (!newest) return newest.error();
  if (newest->empty() || idParts(*newest) >= idParts(last_id_)) return false;
  // Its newest entry comes before the last one read: the stream was deleted (after an
  // entry with an ID in the future) and written again. Whatever comes after its newest
  // would be skipped until the clock passes that ID, for good after the largest ID; so it
  // is read again as at a start, which finds what was skipped. Entries read again are
  // refused as read before.
  logWarning("redis stream " + source_.stream + " went back: its newest entry " +
             printable(*newest, 48) + " comes before " + printable(last_id_, 48) +
             ", the last one read (deleted and written again after an entry of a future ID); "
             "reading " +
             source_.what + " again from the look back");
  last_id_.clear();
  replay_below_ = "+";
  replay_start_.clear();
  replay_until_.clear();
  replayed_ = 0;
  return true;
}

Status StreamTail::replayOnce() {
  const std::string& stream = source_.stream;
  const size_t count = std::min(read_count_, source_.max_replay - replayed_);
  const redis::Script& script = redis::streamIdsBackScript();
  auto replies = http::RedisStore::evalAll(
      client_,
      {{stream,
        {"EVALSHA", script.sha1, "1", stream, replay_below_, replay_from_, std::to_string(count)}}},
      {&script});
  if (!replies) return replies.error();
  if ((*replies)[0].isError()) return Error::failure((*replies)[0].str);
  size_t read = 0;
  for (const redis::Reply& id : (*replies)[0].elements) {  // [id, ...], newest first
    if (id.type != redis::Reply::Type::kString) continue;
    if (replay_below_ == "+") replay_until_ = id.str;  // the newest
    replay_below_ = "(" + id.str;
    replay_start_ = id.str;
    ++read;
  }
  replayed_ += read;
  const bool capped = read == count && replayed_ >= source_.max_replay;
  if (read < count || capped) {
    // found where the replay starts: from there on, read oldest first like any entry
    replaying_ = false;
    if (!replay_start_.empty()) last_id_ = idBefore(replay_start_);
    if (replay_until_.empty()) hand({replayEnd(0)});  // no past to replay
  }
  if (capped) {
    logWarning("reading back the newest " + std::to_string(replayed_) + " " + source_.what +
               " of redis stream " + stream + ", the most a start replays; older ones are " +
               "not read");
  }
  return okStatus();
}

void StreamTail::hand(std::vector<TailEntry> batch) {
  if (batch.empty()) return;
  {
    std::lock_guard lock(mutex_);
    for (TailEntry& entry : batch) queue_.push_back(std::move(entry));
  }
  const uint64_t one = 1;
  if (write(event_.get(), &one, sizeof(one)) < 0) {
    // the counter cannot overflow at these rates; the poll loop wakes on what is there
  }
}

}  // namespace floodgate::daemon
