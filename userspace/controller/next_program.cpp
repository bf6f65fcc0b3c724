// SPDX-License-Identifier: MIT
// Setting, reading and removing the program floodgate tail-calls with what it passes.
#include "controller/next_program.h"

#include <bpf/bpf.h>
#include <unistd.h>

#include <cerrno>

#include "floodgate/common/text.h"
#include "floodgate_shared.h"
#include "kernel/pins.h"
#include "kernel/system.h"
#include "kernel/writer_lock.h"

namespace floodgate {
std::string NextProgramSpec::describe() const {
  if (!pinned.empty()) return "pinned " + pinned;
  if (!object.empty()) return object + (section.empty() ? "" : " section " + section);
  return "none";
}

Result<ProgArray> openNextProgramArray(const std::string& interface) {
  if (Status s = checkInterfaceName(interface); !s) return s.error();
  if (!pinnedAsAttached(interface)) {
    return Error::failure("floodgate is not attached to '" + interface +
                          "' (see 'floodgate status')");
  }
  return openNextProgramPin(interface);
}

Result<ProgArray> openNextProgramPin(const std::string& interface) {
  const std::string path = mapPinPath(interface, "next_program");
  if (access(path.c_str(), F_OK) != 0) {
    return Error::failure("the limiter on '" + interface +
                          "' was attached by a floodgate without a next-program slot: 'floodgate "
                          "attach " +
                          interface + " --replace' adds one (its state is kept)");
  }
  return ProgArray::openPinned(path);
}

Result<std::optional<ProgramInfo>> nextProgram(const std::string& interface) {
  auto array = openNextProgramArray(interface);
  if (!array) return array.error();
  auto id = array->programIn(FG_NEXT_PROGRAM_SLOT);
  if (!id) return id.error();
  if (!*id) return std::optional<ProgramInfo>();
  return programInfoOfId(**id);
}

Result<PreparedNextProgram> prepareNextProgram(const NextProgramSpec& spec) {
  PreparedNextProgram out{spec, UniqueFd()};
  if (!spec.object.empty() && !spec.pinned.empty()) {
    return Error::usage("give the next program as an object file or as a pinned program, not both");
  }
  if (!spec.pinned.empty() && !spec.section.empty()) {
    return Error::usage("a section goes with an object file, not with a pinned program");
  }
  if (spec.none()) {
    if (!spec.section.empty()) return Error::usage("a section goes with an object file");
    return out;
  }
  auto program = spec.pinned.empty() ? loadXdpProgramFile(spec.object, spec.section)
                                     : openPinnedXdpProgram(spec.pinned);
  if (!program) return program.error();
  out.program = std::move(*program);
  return out;
}

Result<NextProgramChange> placeNextProgram(ProgArray& array, PreparedNextProgram prepared,
                                           bool keep_same) {
  NextProgramChange change;
  auto before = array.programIn(FG_NEXT_PROGRAM_SLOT);
  if (!before) return before.error();
  if (*before) change.before = programInfoOfId(**before);
  if (!prepared.program.valid()) {
    if (Status s = array.clear(FG_NEXT_PROGRAM_SLOT); !s) return s.error();
    change.changed = change.before.has_value();
    return change;
  }
  auto info = programInfo(prepared.program.get());
  if (!info) return info.error();
  const bool same_program = change.before && change.before->id == info->id;
  const bool same_code =
      change.before && change.before->name == info->name && change.before->tag == info->tag;
  if (same_program || (keep_same && same_code)) {
    change.after = change.before;
    return change;
  }
  if (Status s = array.set(FG_NEXT_PROGRAM_SLOT, prepared.program.get()); !s) return s.error();
  change.after = *info;
  change.changed = true;
  return change;
}

Result<NextProgramChange> setNextProgram(const std::string& interface, const NextProgramSpec& spec,
                                         bool keep_same) {
  if (Status s = checkPrivileges(); !s) return s.error();
  if (Status s = checkInterfaceName(interface); !s) return s.error();
  auto prepared = prepareNextProgram(spec);
  if (!prepared) return prepared.error();
  return setNextProgram(interface, std::move(*prepared), keep_same);
}

Result<NextProgramChange> setNextProgram(const std::string& interface, PreparedNextProgram prepared,
                                         bool keep_same) {
  auto array = openNextProgramArray(interface);
  if (!array) return array.error();
  WriterLock lock(pinDirectory(interface));
  auto writing = lock.acquire(interface);
  if (!writing) return writing.error();
  return placeNextProgram(*array, std::move(prepared), keep_same);
}

std::string describeProgram(const ProgramInfo& info) {
  return (info.name.empty() ? std::string("(no name)") : info.name) + " (id " +
         std::to_string(info.id) + ")";
}

}  // namespace floodgate
