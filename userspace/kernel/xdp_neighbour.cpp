// SPDX-License-Identifier: MIT
// Loading and opening other XDP programs, describing them, and prog array slots.
#include "kernel/xdp_neighbour.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "kernel/xdp_program.h"

namespace floodgate {
namespace {

struct ObjectCloser {
  void operator()(bpf_object* object) const { bpf_object__close(object); }
};

std::string typeName(uint32_t type) {
  const char* name = libbpf_bpf_prog_type_str(static_cast<bpf_prog_type>(type));
  return name ? name : "type " + std::to_string(type);
}

std::string hexTag(const uint8_t (&tag)[BPF_TAG_SIZE]) {
  std::string out;
  char byte[3];
  for (uint8_t b : tag) {
    std::snprintf(byte, sizeof(byte), "%02x", b);
    out += byte;
  }
  return out;
}

Status checkXdp(const ProgramInfo& info, const std::string& what) {
  if (info.type == BPF_PROG_TYPE_XDP) return okStatus();
  return Error::failure(what + " is a " + typeName(info.type) +
                        " program, not XDP: a tail call from XDP reaches only XDP programs");
}

// The object's program named `wanted` (section or function), or its only XDP program.
Result<bpf_program*> pickProgram(bpf_object* object, const std::string& path,
                                 const std::string& wanted) {
  std::vector<bpf_program*> xdp;
  std::string names;
  bpf_program* program;
  bpf_object__for_each_program(program, object) {
    const std::string section = bpf_program__section_name(program);
    const std::string name = bpf_program__name(program);
    if (!wanted.empty() && (section == wanted || name == wanted)) return program;
    names += (names.empty() ? "" : ", ") + name + " (section " + section + ")";
    if (bpf_program__type(program) == BPF_PROG_TYPE_XDP) xdp.push_back(program);
  }
  if (wanted.empty() && xdp.size() == 1) return xdp.front();
  if (names.empty()) return Error::failure(path + " holds no BPF program");
  if (wanted.empty()) {
    return Error::usage(path + " holds " + std::to_string(xdp.size()) +
                        " XDP programs: name one with --section (" + names + ")");
  }
  return Error::usage(path + " has no program with the section or name '" + wanted + "' (it has " +
                      names + ")");
}

}  // namespace

std::string bpfObjectKind(int fd) {
  char target[64] = {};
  std::string link = "/proc/self/fd/" + std::to_string(fd);
  ssize_t n = readlink(link.c_str(), target, sizeof(target) - 1);
  if (n <= 0) return "";
  std::string text(target, static_cast<size_t>(n));
  const std::string prefix = "anon_inode:";
  return text.rfind(prefix, 0) == 0 ? text.substr(prefix.size()) : "";
}

Result<ProgramInfo> programInfo(int fd) {
  if (bpfObjectKind(fd) != "bpf-prog") return Error::failure("not a BPF program");
  bpf_prog_info info{};
  uint32_t length = sizeof(info);
  if (bpf_obj_get_info_by_fd(fd, &info, &length) != 0) {
    return Error::failure(std::string("cannot read the program's info: ") + std::strerror(errno));
  }
  ProgramInfo out;
  out.id = info.id;
  out.name = info.name;
  out.tag = hexTag(info.tag);
  out.type = info.type;
  return out;
}

std::optional<ProgramInfo> programInfoOfId(uint32_t id) {
  UniqueFd fd(bpf_prog_get_fd_by_id(id));
  if (!fd.valid()) return std::nullopt;
  auto info = programInfo(fd.get());
  if (!info) return std::nullopt;
  return *info;
}

std::optional<std::vector<uint32_t>> programMapIds(uint32_t id) {
  UniqueFd fd(bpf_prog_get_fd_by_id(id));
  if (!fd.valid()) return std::nullopt;
  // first how many, then the ids (a program's maps are fixed once it is loaded)
  bpf_prog_info info{};
  uint32_t length = sizeof(info);
  if (bpf_obj_get_info_by_fd(fd.get(), &info, &length) != 0) return std::nullopt;
  std::vector<uint32_t> ids(info.nr_map_ids);
  info = {};
  info.nr_map_ids = static_cast<uint32_t>(ids.size());
  info.map_ids = reinterpret_cast<uint64_t>(ids.data());
  length = sizeof(info);
  if (bpf_obj_get_info_by_fd(fd.get(), &info, &length) != 0) return std::nullopt;
  ids.resize(std::min<size_t>(ids.size(), info.nr_map_ids));
  return ids;
}

Result<UniqueFd> loadXdpProgramFile(const std::string& object_path, const std::string& program) {
  captureLibbpfMessages();
  std::unique_ptr<bpf_object, ObjectCloser> object(
      bpf_object__open_file(object_path.c_str(), nullptr));
  if (!object) {
    return Error::failure("cannot open the BPF object " + object_path + ": " +
                          std::strerror(errno));
  }
  auto picked = pickProgram(object.get(), object_path, program);
  if (!picked) return picked.error();
  bpf_program* chosen = *picked;
  const std::string what =
      std::string("program ") + bpf_program__name(chosen) + " of " + object_path;
  if (bpf_program__type(chosen) != BPF_PROG_TYPE_XDP) {
    return Error::failure(what + " is a " + typeName(bpf_program__type(chosen)) +
                          " program, not XDP: a tail call from XDP reaches only XDP programs");
  }
  bpf_program* other;
  bpf_object__for_each_program(other, object.get()) {
    if (other != chosen) bpf_program__set_autoload(other, false);
  }
  if (int err = bpf_object__load(object.get()); err != 0) {
    return Error::failure("the kernel refused " + what + " (" + std::strerror(-err) +
                          "): " + lastLibbpfMessage());
  }
  // the object closes its own fd: keep one of ours
  int fd = fcntl(bpf_program__fd(chosen), F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return Error::failure("cannot keep " + what + ": " + std::strerror(errno));
  return UniqueFd(fd);
}

Result<UniqueFd> openPinnedXdpProgram(const std::string& path) {
  UniqueFd fd(bpf_obj_get(path.c_str()));
  if (!fd.valid()) {
    return Error::failure("cannot open the pinned program " + path + ": " + std::strerror(errno));
  }
  auto info = programInfo(fd.get());
  if (!info) return Error::failure(path + " is not a pinned BPF program");
  if (Status s = checkXdp(*info, "the program pinned at " + path); !s) return s.error();
  return fd;
}

Result<ProgArray> ProgArray::openPinned(const std::string& path) {
  UniqueFd fd(bpf_obj_get(path.c_str()));
  if (!fd.valid()) {
    return Error::failure("cannot open the pinned prog array " + path + ": " +
                          std::strerror(errno));
  }
  return adopt(std::move(fd), path);
}

Result<ProgArray> ProgArray::adopt(UniqueFd fd, std::string what) {
  if (bpfObjectKind(fd.get()) != "bpf-map") return Error::failure(what + " is not a BPF map");
  bpf_map_info info{};
  uint32_t length = sizeof(info);
  if (bpf_obj_get_info_by_fd(fd.get(), &info, &length) != 0) {
    return Error::failure("cannot read the map " + what + ": " + std::strerror(errno));
  }
  if (info.type != BPF_MAP_TYPE_PROG_ARRAY) {
    const char* type = libbpf_bpf_map_type_str(static_cast<bpf_map_type>(info.type));
    return Error::failure(what + " is a " + (type ? type : "other") +
                          " map, not a prog_array: only a prog array holds programs to tail-call");
  }
  ProgArray out;
  out.fd_ = std::move(fd);
  out.id_ = info.id;
  out.slots_ = info.max_entries;
  out.name_ = info.name;
  out.what_ = std::move(what);
  return out;
}

Result<std::optional<uint32_t>> ProgArray::programIn(uint32_t slot) const {
  uint32_t id = 0;
  if (bpf_map_lookup_elem(fd_.get(), &slot, &id) == 0) return std::optional<uint32_t>(id);
  if (errno == ENOENT) return std::optional<uint32_t>();
  return Error::failure("cannot read slot " + std::to_string(slot) + " of " + what_ + ": " +
                        std::strerror(errno));
}

std::optional<uint32_t> ProgArray::slotOf(uint32_t program_id) const {
  for (uint32_t slot = 0; slot < slots_; ++slot) {
    auto held = programIn(slot);
    if (held && *held == program_id) return slot;
  }
  return std::nullopt;
}

Status ProgArray::set(uint32_t slot, int program_fd) {
  if (slot >= slots_) {
    return Error::usage(what_ + " has " + std::to_string(slots_) + " slots (0 to " +
                        std::to_string(slots_ - 1) + "), not slot " + std::to_string(slot));
  }
  if (bpf_map_update_elem(fd_.get(), &slot, &program_fd, BPF_ANY) == 0) return okStatus();
  int err = errno;
  if (err == EINVAL) {
    return Error::failure("the kernel refused the program for slot " + std::to_string(slot) +
                          " of " + what_ +
                          ": a prog array takes only programs of the type, attach type and "
                          "xdp.frags kind of the programs that use it");
  }
  return Error::failure("cannot set slot " + std::to_string(slot) + " of " + what_ + ": " +
                        std::strerror(err));
}

Status ProgArray::clear(uint32_t slot) {
  if (bpf_map_delete_elem(fd_.get(), &slot) == 0 || errno == ENOENT) return okStatus();
  return Error::failure("cannot empty slot " + std::to_string(slot) + " of " + what_ + ": " +
                        std::strerror(errno));
}

std::string ExtProbe::describe() const {
  return "libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_EXT) = " + std::to_string(result) +
         (result == 1   ? " (ext programs load)"
          : result == 0 ? " (this kernel has no ext programs)"
                        : " (the probe failed: " + std::string(std::strerror(-result)) + ")");
}

ExtProbe probeExtPrograms() {
  ExtProbe out;
  out.result = libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_EXT, nullptr);
  return out;
}

}  // namespace floodgate
