// SPDX-License-Identifier: MIT
// The XDP program behind floodgate: what floodgate passes goes to it by a tail call through
// the limiter's pinned `next_program` prog array. Setting, replacing and removing it live.
#pragma once

#include <optional>
#include <string>

#include "floodgate/common/result.h"
#include "kernel/unique_fd.h"
#include "kernel/xdp_neighbour.h"

namespace floodgate {

// Which program goes behind floodgate: one of an object file (by section or function name;
// none named: the object's only XDP program), or one pinned in bpffs. Neither: none.
struct NextProgramSpec {
  std::string object;
  std::string section;
  std::string pinned;

  bool none() const { return object.empty() && pinned.empty(); }
  bool operator==(const NextProgramSpec&) const = default;
  // "next.o section xdp", "pinned /sys/fs/bpf/x", "none"
  std::string describe() const;
};

// What a change of the next program did.
struct NextProgramChange {
  std::optional<ProgramInfo> before;  // the program that was there
  std::optional<ProgramInfo> after;   // the program there now
  bool changed = false;               // false: the slot was left as it was
};

// A next program loaded and checked but not yet in place, so that whatever can fail about
// it fails before anything changes. An empty fd stands for none.
struct PreparedNextProgram {
  NextProgramSpec spec;
  UniqueFd program;
};

// Loads (or opens the pin of) the program `spec` names, and checks that it is XDP.
Result<PreparedNextProgram> prepareNextProgram(const NextProgramSpec& spec);

// Puts `prepared` in the next-program slot of `array` (replacing, atomically, the one there),
// or empties it for none. With `keep_same`, a program with the name and tag (instructions)
// of the one there is not swapped in, so its maps keep their state (an unchanged config
// reloaded, a daemon restarted). The caller holds the limiter's writer lock.
Result<NextProgramChange> placeNextProgram(ProgArray& array, PreparedNextProgram prepared,
                                           bool keep_same);

// prepareNextProgram, then placeNextProgram in the running limiter of `interface` under its
// writer lock. A file that does not load, or a program that is not XDP, changes nothing.
Result<NextProgramChange> setNextProgram(const std::string& interface, const NextProgramSpec& spec,
                                         bool keep_same = false);
Result<NextProgramChange> setNextProgram(const std::string& interface, PreparedNextProgram prepared,
                                         bool keep_same);

// The program behind the limiter of `interface`, if any.
Result<std::optional<ProgramInfo>> nextProgram(const std::string& interface);

// The running limiter's own prog array, pinned beside its other maps.
Result<ProgArray> openNextProgramArray(const std::string& interface);
// The same pin whether or not the limiter is attached yet (a program just loaded).
Result<ProgArray> openNextProgramPin(const std::string& interface);

// What status and detach say of a program: "NAME (id N)".
std::string describeProgram(const ProgramInfo& info);

}  // namespace floodgate
