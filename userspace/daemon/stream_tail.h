// SPDX-License-Identifier: MIT
// StreamTail: follows one Redis stream on a thread of its own and hands the entries it
// reads, with Redis's clock at the time, to the daemon's poll loop through an eventfd.
// Every controller reads the whole stream (no consumer group). It starts `lookback_ns` back
// on Redis's clock, and after a lost Redis it goes on from the last entry it read. With
// `max_replay`, it reads at most that many entries of the past, the newest ones: it looks
// back newest first only to find the first of them, then reads everything oldest first, as
// a reader running all along read it (a copy added again comes after its original). What an
// entry means is its reader's business (stream_report_reader.h, fleet_bans.h). Nothing it
// does blocks the poll loop: stop() only asks the thread to end.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "floodgate/common/result.h"
#include "floodgate/redis/client.h"
#include "kernel/unique_fd.h"

namespace floodgate::daemon {

struct StreamTailSource {
  http::redis::ClientOptions client;
  std::string stream;
  uint64_t lookback_ns = 0;  // how far back to read on start
  std::string what;          // what the entries are, for log lines ("offender reports")
  // Entries of the past (before the start) read at most, the newest ones (still oldest
  // first); 0: all of them.
  size_t max_replay = 0;

  bool operator==(const StreamTailSource& other) const;
};

// One entry as read: its ID, its [field, value, ...] list and Redis's clock when read.
struct TailEntry {
  std::string id;
  http::redis::Reply fields;
  int64_t now_ms = 0;
  // Of the past a start replays (max_replay), which comes first, oldest first as the rest.
  bool read_back = false;
  // No entry: the replay of the past is over (every entry read_back came before it). Only
  // with max_replay, once per start.
  bool replay_end = false;
};

class StreamTail {
 public:
  // Entries read but not yet drained at most; past it, reading waits (Redis keeps them).
  static constexpr size_t kCapacity = 4096;

  static Result<std::unique_ptr<StreamTail>> start(StreamTailSource source);
  // Joins the thread: waits for the Redis call in progress (up to the client's timeout).
  // Call stop() first and destroy it once stopped() to never wait.
  ~StreamTail();
  void stop() { stop_ = true; }
  bool stopped() const { return finished_; }
  StreamTail(const StreamTail&) = delete;
  StreamTail& operator=(const StreamTail&) = delete;

  const StreamTailSource& source() const { return source_; }
  // Readable while entries wait.
  int fd() const { return event_.get(); }
  // The entries waiting, at most `max`, oldest first; never blocks.
  std::vector<TailEntry> drain(size_t max);

 private:
  StreamTail(StreamTailSource source, UniqueFd event);
  void run();
  // Reads one batch after last_id_ (or looks back one batch of the past); whether more may
  // wait at once (a full batch, or the look back).
  Result<bool> readOnce();
  // The ID of the stream's newest entry ("" for none). It reads that entry whole (Redis
  // has no read of an ID alone), so it is only called as readAgainIfBehind says.
  Result<std::string> newestId();
  // Whether the stream went back below last_id_ (its newest entry before it), looked at
  // once every kBehindCheckMs at most: then it is read again as at a start, and true.
  // False while it did not; an error passed on. For a last_id_ ahead of Redis's clock only,
  // where no publisher's entry is (so a writer can make the check copy a huge entry at most
  // once every kBehindCheckMs).
  Result<bool> readAgainIfBehind();
  // Looks back one batch of the past, newest first, below replay_below_, for the oldest
  // entry a start reads (max_replay only); reads none of them.
  Status replayOnce();
  // Queues `batch` and wakes the poll loop.
  void hand(std::vector<TailEntry> batch);
  void sleepUnlessStopped(int64_t ms);

  StreamTailSource source_;
  UniqueFd event_;
  http::redis::Client client_;
  std::string last_id_;  // empty until the start point is known
  // The look back for where the replay of the past starts (max_replay): the oldest ID it
  // may start at, the ID it looks below next ("+": from the newest), how many it passed,
  // and the oldest it passed so far.
  std::string replay_from_;
  std::string replay_below_ = "+";
  std::string replay_start_;
  // The newest entry of the past, the last one read_back; empty once the replay is over.
  std::string replay_until_;
  size_t replayed_ = 0;
  // Entries a call asks for: kReadCount, and 1 after a failed call.
  static constexpr size_t kReadCount = 256;
  size_t read_count_ = kReadCount;
  static constexpr int64_t kBehindCheckMs = 5000;
  std::chrono::steady_clock::time_point next_behind_check_{};
  bool replaying_ = false;
  std::mutex mutex_;
  std::deque<TailEntry> queue_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> finished_{false};
  std::thread thread_;
};

}  // namespace floodgate::daemon
