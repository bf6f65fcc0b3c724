// SPDX-License-Identifier: MIT
// Other XDP programs beside floodgate's: loading one from an object file or a pin, what the
// kernel says of one, and the slots of a prog array (BPF_MAP_TYPE_PROG_ARRAY) that tail
// calls go through.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "floodgate/common/result.h"
#include "kernel/unique_fd.h"

namespace floodgate {

// An XDP program as the kernel describes it.
struct ProgramInfo {
  uint32_t id = 0;
  std::string name;
  std::string tag;  // hex, of its instructions with map references left out
  uint32_t type = 0;
};

// What kind of BPF object an fd is: "bpf-prog", "bpf-map", "bpf-link" (as the kernel names
// their inodes), or "" for none.
std::string bpfObjectKind(int fd);

// What the kernel says of the program behind `fd`.
Result<ProgramInfo> programInfo(int fd);
// What the kernel says of the program with `id`; nothing when it is gone or unreadable.
std::optional<ProgramInfo> programInfoOfId(uint32_t id);
// The ids of the maps the program with `id` uses; nothing when it is gone or unreadable.
std::optional<std::vector<uint32_t>> programMapIds(uint32_t id);

// Loads the XDP program of `object_path` whose section name or function name is `program`
// (empty: the object's only XDP program); only it is loaded. Refuses, in one line, a file
// that does not open, a program that is not there or not XDP, and one the verifier rejects.
// The program's maps live as long as the program; prog arrays among them must be pinned by
// the object (libbpf's pinning) to keep their entries after this process exits.
Result<UniqueFd> loadXdpProgramFile(const std::string& object_path, const std::string& program);

// Opens the program pinned at `path`; refuses anything that is not an XDP program.
Result<UniqueFd> openPinnedXdpProgram(const std::string& path);

// A prog array's slots: open (checked to be a prog array), read, set and clear. Setting a
// slot is one atomic store, so a tail call in flight sees the old program or the new one.
class ProgArray {
 public:
  // The prog array pinned at `path`.
  static Result<ProgArray> openPinned(const std::string& path);
  // The prog array of `fd` (taken over); `what` names it in errors.
  static Result<ProgArray> adopt(UniqueFd fd, std::string what);

  int fd() const { return fd_.get(); }
  uint32_t id() const { return id_; }
  uint32_t slots() const { return slots_; }
  const std::string& name() const { return name_; }

  // The id of the program in `slot`, none when it is empty.
  Result<std::optional<uint32_t>> programIn(uint32_t slot) const;
  // The first slot that holds program `program_id`, if any.
  std::optional<uint32_t> slotOf(uint32_t program_id) const;
  // Puts `program_fd` in `slot`, replacing what is there. The kernel refuses a program of
  // another type, attach type or xdp.frags kind than the array's first user's (an XDP
  // array takes only XDP programs).
  Status set(uint32_t slot, int program_fd);
  // Empties `slot`; fine when it is empty already.
  Status clear(uint32_t slot);

 private:
  ProgArray() = default;
  UniqueFd fd_;
  uint32_t id_ = 0;
  uint32_t slots_ = 0;
  std::string name_;
  std::string what_;
};

// Whether this kernel loads freplace (BPF_PROG_TYPE_EXT) programs, which libxdp's
// multi-program dispatcher needs: libbpf_probe_bpf_prog_type's answer (1 yes, 0 no,
// negative: the probe failed), and the probe and its result in words for messages.
struct ExtProbe {
  int result = 0;
  bool available() const { return result == 1; }
  std::string describe() const;
};
ExtProbe probeExtPrograms();

}  // namespace floodgate
