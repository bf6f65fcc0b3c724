// SPDX-License-Identifier: MIT
// Loading the XDP program from its skeleton with pinned maps, and attaching it by a link.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "floodgate.skel.h"
#include "floodgate/common/result.h"
#include "kernel/unique_fd.h"

namespace floodgate {

struct SkeletonDeleter {
  void operator()(floodgate_bpf* skeleton) const { floodgate_bpf__destroy(skeleton); }
};
using Skeleton = std::unique_ptr<floodgate_bpf, SkeletonDeleter>;

enum class XdpMode { kAuto, kNative, kGeneric };

const char* xdpModeName(XdpMode mode);

// Settings fixed when the program is loaded (rodata and map sizes).
struct LoadSettings {
  std::string interface;  // whose pins the maps use (existing pins are reused)
  uint32_t table_slots = 0;
  uint32_t list_max_entries = 0;
  uint64_t tick_units = 0;        // bucket time units per jiffy
  uint32_t ticks_per_second = 0;  // the kernel's HZ, for the event budget
  bool test_clock = false;        // tests only: the clock is the test_jiffies global
  // tests only: load the program for kernels without may_goto whatever this one has
  bool test_older_program = false;
};

// Whether the kernel takes the may_goto instruction (Linux 6.9 and later), which the walk
// of floodgate_xdp's rules needs; floodgate_older, loaded where it does not, walks them
// with bpf_loop instead.
bool kernelHasMayGoto();

// Opens, configures and loads the program; maps are pinned under the interface's pin
// directory, reusing pins that are already there (their state is kept).
Result<Skeleton> loadProgram(const LoadSettings& settings);

// The fd of the program loadProgram loaded (the one of the two the kernel takes).
int loadedProgramFd(const floodgate_bpf& skeleton);

// Attaches `program_fd` to `ifindex` by a BPF link in `mode`; `auto` tries native, then
// generic, and reports the mode it got in *used.
Result<UniqueFd> attachXdp(int program_fd, int ifindex, const std::string& interface, XdpMode mode,
                           XdpMode* used);

// What the kernel reports for the XDP program on an interface.
struct XdpAttachment {
  uint32_t program_id = 0;
  std::string mode;  // native | generic | offload | none
};
XdpAttachment queryXdp(int ifindex);

// Keeps libbpf's messages from here on (instead of letting libbpf print them), for
// lastLibbpfMessage.
void captureLibbpfMessages();

// libbpf's messages of the last failed call, for --verbose output and errors.
std::string lastLibbpfMessage();

}  // namespace floodgate
