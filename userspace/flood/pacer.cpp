// SPDX-License-Identifier: MIT
// The pacer's arithmetic: a cost model of one kernel call, and chunk sizes from it.
#include "flood/pacer.h"

#include <algorithm>
#include <cmath>

namespace floodgate::flood {
namespace {

constexpr double kNsPerSecond = 1e9;
// No machine sends a frame in less: keeps a per-frame estimate of 0 from meaning "infinitely
// fast" when a long call happened to cost no more than the smallest one.
constexpr double kFloorPerFrameNs = 1.0;
// A call long enough to tell the per-frame part from the fixed one.
constexpr uint64_t kMeasuringFrames = 4096;
// Before the per-frame cost is known, a measuring call is sized as if a frame cost this
// (faster than any sender here): on a machine where a call costs 25 ms whatever it holds,
// the measuring call then carries useful frames instead of being all fixed cost.
constexpr double kOptimisticPerFrameNs = 32.0;
// A paced call carries at most this many seconds of the rate, or four calls' fixed cost:
// after a stall the pacer catches up, but never in one burst of the whole backlog.
constexpr double kPacedChunkSeconds = 0.002;
constexpr double kPacedChunkCalls = 4.0;

}  // namespace

void CallCost::observe(uint64_t frames, uint64_t call_ns) {
  recent_ns_[calls_ % kRecentCalls] = call_ns;
  fixed_ns_ = calls_++ == 0 ? call_ns : std::min(fixed_ns_, call_ns);
  // The fixed part wanders by milliseconds from call to call where it is large; only a
  // call whose frames took at least half as long again tells the per-frame part apart.
  const uint64_t frames_ns = call_ns - std::min(call_ns, fixed_ns_);
  if (frames < kMeasuringFrames || 2 * frames_ns < fixed_ns_) return;
  const double sample =
      std::max(kFloorPerFrameNs, static_cast<double>(frames_ns) / static_cast<double>(frames));
  // Each sample is the per-frame part plus the fixed part's wander over the smallest call
  // spread over its frames, so never below the truth: the smallest is the closest.
  per_frame_ns_ = per_frame_ns_ == 0 ? sample : std::min(per_frame_ns_, sample);
}

uint64_t CallCost::recentNs() const {
  const size_t seen = static_cast<size_t>(std::min<uint64_t>(calls_, kRecentCalls));
  return seen ? *std::min_element(recent_ns_, recent_ns_ + seen) : 0;
}

double CallCost::ratePps(uint64_t frames) const {
  const double call_ns = static_cast<double>(fixed_ns_) + per_frame_ns_ * frames;
  return call_ns > 0 ? static_cast<double>(frames) * kNsPerSecond / call_ns : 0;
}

double Pacer::reachablePps() const {
  if (cost_.perFrameNs() == 0) return 0;
  // what a whole second of frames in one call sends
  return cost_.ratePps(
      std::min<uint64_t>(kMaxChunk, static_cast<uint64_t>(kNsPerSecond / cost_.perFrameNs())));
}

uint64_t Pacer::dueBy(uint64_t at_ns) const {
  return static_cast<uint64_t>(static_cast<unsigned __int128>(at_ns) * rate_pps_ /
                               static_cast<uint64_t>(kNsPerSecond));
}

uint64_t Pacer::unpacedChunk(uint64_t elapsed_ns) const {
  if (!cost_.known()) return first_chunk_;
  const double fixed_ns = static_cast<double>(cost_.fixedNs());
  if (cost_.perFrameNs() == 0) {
    return std::clamp<uint64_t>(static_cast<uint64_t>(fixed_ns / kOptimisticPerFrameNs),
                                kMinUnpacedChunk, kMaxChunk);
  }
  // Once the cost is known, one call for all the time that is left: every further call
  // would pay the fixed cost again. (A count bound is applied by the caller.)
  return fitsIn(elapsed_ns);
}

uint64_t Pacer::fitsIn(uint64_t elapsed_ns) const {
  if (duration_ns_ == 0 || cost_.perFrameNs() == 0) return kMaxChunk;
  const double left_ns = static_cast<double>(duration_ns_ - std::min(duration_ns_, elapsed_ns));
  const double fits = (left_ns - static_cast<double>(cost_.fixedNs())) / cost_.perFrameNs();
  return std::clamp<uint64_t>(fits > 0 ? static_cast<uint64_t>(fits) : 0, first_chunk_, kMaxChunk);
}

uint64_t Pacer::pacedChunk(uint64_t elapsed_ns, uint64_t sent) const {
  if (!cost_.known()) {
    const uint64_t due = dueBy(elapsed_ns);
    return due > sent ? std::min(due - sent, first_chunk_) : 0;
  }
  // What is due by the time the call's fixed part is over, and no more. Closed loop: the
  // frames that fall due while a call runs go in the next one, so the rate follows what the
  // calls really cost. Predicting them from the cost model instead would follow the model:
  // on a machine whose other work makes every call cost several times the smallest, the
  // extra reads as cost per frame, and the prediction ran ahead of the rate by as much.
  const uint64_t due = dueBy(elapsed_ns + leadNs());
  if (due <= sent) return 0;
  const double rate = static_cast<double>(rate_pps_);
  // at most what is due over a few calls as they cost lately: enough to keep up whatever
  // they cost, never the whole backlog of a stall in one burst
  const double cap =
      std::max(rate * kPacedChunkSeconds,
               rate * kPacedChunkCalls * static_cast<double>(cost_.recentNs()) / kNsPerSecond);
  double chunk = std::min(static_cast<double>(due - sent), cap);
  // never past the end of a duration: a paced run sends rate * duration, and a rate out
  // of reach what fits in the time
  if (duration_ns_) {
    const uint64_t total = dueBy(duration_ns_);
    if (total <= sent) return 0;  // the rest of the duration is a wait
    chunk = std::min(
        {chunk, static_cast<double>(total - sent), static_cast<double>(fitsIn(elapsed_ns))});
  }
  return std::clamp<uint64_t>(static_cast<uint64_t>(std::ceil(chunk)), 1, kMaxChunk);
}

uint64_t Pacer::next(uint64_t elapsed_ns, uint64_t sent) const {
  return rate_pps_ ? pacedChunk(elapsed_ns, sent) : unpacedChunk(elapsed_ns);
}

uint64_t Pacer::waitNs(uint64_t elapsed_ns, uint64_t sent) const {
  if (rate_pps_ == 0 || next(elapsed_ns, sent) > 0) return 0;
  // frame k is due at k / rate seconds; a confirmed fixed cost sends it that much earlier
  const auto due_ns = static_cast<uint64_t>(
      (static_cast<unsigned __int128>(sent + 1) * static_cast<uint64_t>(kNsPerSecond) + rate_pps_ -
       1) /
      rate_pps_);
  const uint64_t lead_ns = leadNs();
  const uint64_t send_at = due_ns > lead_ns ? due_ns - lead_ns : 0;
  return send_at > elapsed_ns ? send_at - elapsed_ns : 1;
}

}  // namespace floodgate::flood
