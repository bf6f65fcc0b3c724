// SPDX-License-Identifier: MIT
// The stream's reading thread: XREAD BLOCK in a loop, with Redis's TIME read in the same
// round trip to age what it got; a lost Redis is logged once and retried every second.
#include "daemon/stream_tail.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstring>
#include <utility>

#include "daemon/log.h"

namespace floodgate::daemon {
namespace {

namespace redis = http::redis;

constexpr int64_t kBlockMs = 500;
constexpr int64_t kRetryMs = 1000;
constexpr int64_t kSliceMs = 100;
constexpr size_t kReadCount = 256;

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

// The ID just before `id` in the stream's order, so that XREAD after it starts at `id`.
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
         stream == other.stream && lookback_ns == other.lookback_ns && what == other.what &&
         max_replay == other.max_replay;
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
    Status read = readOnce();
    if (read && failing) {
      logInfo("reading " + source_.what + " from redis stream " + source_.stream + " again");
    } else if (!read && !failing) {
      logWarning("cannot read " + source_.what + " from redis stream " + source_.stream +
                 " (they wait in Redis; retrying every second from the last one read): " +
                 read.error().message);
    }
    failing = !read;
    if (failing) sleepUnlessStopped(kRetryMs);
  }
}

Status StreamTail::readOnce() {
  const std::string& stream = source_.stream;
  auto deadline = [this](int64_t extra_ms) {
    return std::chrono::steady_clock::now() +
           std::chrono::milliseconds(source_.client.timeout_ms + extra_ms);
  };
  if (last_id_.empty()) {
    auto time = client_.run({{stream, {"TIME"}}}, deadline(0));
    if (!time) return time.error();
    auto now_ms = timeReplyMs((*time)[0]);
    if (!now_ms) return now_ms.error();
    const int64_t lookback_ms = static_cast<int64_t>(source_.lookback_ns / 1'000'000);
    last_id_ = std::to_string(std::max<int64_t>(0, *now_ms - lookback_ms)) + "-0";
    logInfo("taking " + source_.what + " from redis stream " + stream + " (signed by the fleet)");
    replaying_ = source_.max_replay > 0;
    replay_from_ = last_id_;
  }
  if (replaying_) return replayOnce();
  auto replies = client_.run({{stream,
                               {"XREAD", "COUNT", std::to_string(kReadCount), "BLOCK",
                                std::to_string(kBlockMs), "STREAMS", stream, last_id_}},
                              {stream, {"TIME"}}},
                             deadline(kBlockMs));
  if (!replies) return replies.error();
  if ((*replies)[0].isError()) return Error::failure((*replies)[0].str);
  const redis::Reply& result = (*replies)[0];
  auto now_ms = timeReplyMs((*replies)[1]);
  if (!now_ms) return now_ms.error();
  std::vector<TailEntry> batch;
  if (result.type != redis::Reply::Type::kArray || result.elements.empty()) {
    // nothing after last_id_: whatever of the past was left is gone (trimmed)
    if (!replay_until_.empty()) batch.push_back(replayEnd(*now_ms));
    replay_until_.clear();
    hand(std::move(batch));
    return okStatus();
  }
  // [[stream, [[id, [field, value, ...]], ...]]]
  const redis::Reply& entries =
      result.elements[0].elements.size() == 2 ? result.elements[0].elements[1] : redis::Reply{};
  for (const redis::Reply& entry : entries.elements) {
    if (entry.elements.size() != 2) continue;
    const std::string& id = entry.elements[0].str;
    last_id_ = id;
    if (!replay_until_.empty() && idParts(id) > idParts(replay_until_)) {
      batch.push_back(replayEnd(*now_ms));  // the newest of the past is gone (trimmed)
      replay_until_.clear();
    }
    batch.push_back({id, entry.elements[1], *now_ms, !replay_until_.empty()});
    if (id == replay_until_) {
      batch.push_back(replayEnd(*now_ms));
      replay_until_.clear();
    }
  }
  hand(std::move(batch));
  return okStatus();
}

Status StreamTail::replayOnce() {
  const std::string& stream = source_.stream;
  const size_t count = std::min(kReadCount, source_.max_replay - replayed_);
  auto replies = client_.run(
      {{stream,
        {"XREVRANGE", stream, replay_below_, replay_from_, "COUNT", std::to_string(count)}}},
      std::chrono::steady_clock::now() + std::chrono::milliseconds(source_.client.timeout_ms));
  if (!replies) return replies.error();
  if ((*replies)[0].isError()) return Error::failure((*replies)[0].str);
  size_t read = 0;
  for (const redis::Reply& entry : (*replies)[0].elements) {  // [[id, [field, value, ...]], ...]
    if (entry.elements.size() != 2) continue;
    if (replay_below_ == "+") replay_until_ = entry.elements[0].str;  // the newest
    replay_below_ = "(" + entry.elements[0].str;
    replay_start_ = entry.elements[0].str;
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
