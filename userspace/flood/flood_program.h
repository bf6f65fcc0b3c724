// SPDX-License-Identifier: MIT
// FloodProgram: the generator loaded with one template, run in BPF_PROG_RUN's live-frames
// mode so every frame it returns XDP_TX for leaves through a given interface.
// Not thread-safe; one per sending thread.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "flood/frame_builder.h"
#include "flood_shared.h"  // before the skeleton, which names struct fl_template
#include "floodgate/common/result.h"
// clang-format off
#include "flood.skel.h"
// clang-format on

namespace floodgate::flood {

struct FloodSkeletonDeleter {
  void operator()(flood_bpf* skeleton) const { flood_bpf__destroy(skeleton); }
};

class FloodProgram {
 public:
  // Loads the generator for `frame` (its settings go into the program's rodata).
  static Result<FloodProgram> load(const FrameTemplate& frame);

  // Runs the program `frames` times on live frames arriving on `ifindex` (queue 0), in
  // kernel batches of `batch` (1..256). Blocks until done; how many frames went: `frames`,
  // or fewer when a signal interrupted it (counted by the program, since the kernel's
  // answer to an interrupted run says nothing of how far it got).
  Result<uint64_t> send(int ifindex, uint32_t frames, uint32_t batch);

 private:
  // The program's count of the frames it has sent (its next_source counter).
  Result<uint64_t> framesSent() const;

  std::unique_ptr<flood_bpf, FloodSkeletonDeleter> skeleton_;
  std::vector<uint8_t> frame_;
  uint64_t sent_ = 0;  // frames sent by the calls before this one
};

}  // namespace floodgate::flood
