// SPDX-License-Identifier: MIT
// Loading the generator's skeleton and driving BPF_PROG_RUN with BPF_F_TEST_XDP_LIVE_FRAMES.
#include "flood/flood_program.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace floodgate::flood {

Result<FloodProgram> FloodProgram::load(const FrameTemplate& frame) {
  FloodProgram out;
  out.skeleton_.reset(flood_bpf__open());
  if (!out.skeleton_) {
    return Error::failure("cannot open the flood generator: " + std::string(std::strerror(errno)));
  }
  out.skeleton_->bss->tmpl = frame.settings;
  if (int err = flood_bpf__load(out.skeleton_.get()); err != 0) {
    if (err == -EPERM) {
      return Error::failure("the kernel refused to load the flood generator (EPERM): run as root");
    }
    return Error::failure("the kernel refused to load the flood generator (" +
                          std::string(std::strerror(-err)) + "): a 6.x kernel with BPF is needed");
  }
  out.frame_ = frame.frame;
  return out;
}

Result<uint64_t> FloodProgram::framesSent() const {
  const uint32_t zero = 0;
  uint64_t count = 0;
  if (bpf_map__lookup_elem(skeleton_->maps.next_source, &zero, sizeof(zero), &count, sizeof(count),
                           0) != 0) {
    return Error::failure("cannot read the flood generator's frame count: " +
                          std::string(std::strerror(errno)));
  }
  return count;
}

Result<uint64_t> FloodProgram::send(int ifindex, uint32_t frames, uint32_t batch) {
  // Live frames: the kernel copies the frame into pages of its own and runs the program on
  // them as if they arrived on ifindex; XDP_TX becomes a redirect out of that interface.
  xdp_md context{};
  context.data_end = static_cast<uint32_t>(frame_.size());
  context.ingress_ifindex = static_cast<uint32_t>(ifindex);
  context.rx_queue_index = 0;
  LIBBPF_OPTS(bpf_test_run_opts, opts);
  opts.data_in = frame_.data();
  opts.data_size_in = static_cast<uint32_t>(frame_.size());
  opts.ctx_in = &context;
  opts.ctx_size_in = sizeof(context);
  opts.repeat = frames;
  opts.batch_size = batch;
  opts.flags = BPF_F_TEST_XDP_LIVE_FRAMES;
  if (bpf_prog_test_run_opts(bpf_program__fd(skeleton_->progs.flood_xdp), &opts) != 0) {
    int err = errno;
    if (err == EINTR) {
      // Interrupted between two kernel batches: each batch ran was flushed out whole, and
      // the program counted every frame of it.
      auto counted = framesSent();
      if (!counted) return counted.error();
      const uint64_t went = std::min<uint64_t>(*counted - sent_, frames);
      sent_ = *counted;
      return went;
    }
    return Error::failure("BPF_PROG_RUN in live-frames mode failed (" +
                          std::string(std::strerror(err)) +
                          "): a kernel of 5.18 or later is needed, and an interface that is up");
  }
  sent_ += frames;
  return static_cast<uint64_t>(frames);
}

}  // namespace floodgate::flood
