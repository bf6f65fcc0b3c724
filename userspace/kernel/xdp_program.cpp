// SPDX-License-Identifier: MIT
// Loading floodgate's skeleton with pinned maps and attaching it to an interface.
#include "kernel/xdp_program.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "floodgate_shared.h"
#include "kernel/pins.h"

namespace floodgate {
namespace {

thread_local std::string libbpf_log;

// libbpf prints warnings itself; keep them for errors and --verbose rather than letting
// several lines of library output stand in for one clear message.
int captureLibbpf(enum libbpf_print_level level, const char* format, va_list args) {
  if (level == LIBBPF_DEBUG && !std::getenv("FLOODGATE_DEBUG")) return 0;
  // a verifier log comes as one message of up to megabytes: keep all of it
  char* line = nullptr;
  if (vasprintf(&line, format, args) < 0) return 0;
  libbpf_log += line;
  if (std::getenv("FLOODGATE_DEBUG")) std::fputs(line, stderr);
  std::free(line);
  return 0;
}

Status setMapPins(bpf_object* object, const std::string& interface) {
  bpf_map* map;
  bpf_object__for_each_map(map, object) {
    // per-packet scratch and the internal rodata/bss maps have nothing worth keeping
    if (bpf_map__is_internal(map) || std::strcmp(bpf_map__name(map), "slot_query") == 0) {
      continue;
    }
    std::string path = mapPinPath(interface, bpf_map__name(map));
    if (int err = bpf_map__set_pin_path(map, path.c_str()); err != 0) {
      return Error::failure("cannot set the pin path " + path + ": " + std::strerror(-err));
    }
  }
  return okStatus();
}

}  // namespace

bool kernelHasMayGoto() {
  // -1 until a probe answers; a probe that fails for another reason (no permission, no
  // memory) answers nothing, and the next load asks again
  static std::atomic<int> known{-1};
  if (known >= 0) return known == 1;
  // may_goto +0 (BPF_JMP | BPF_JCOND, src BPF_MAY_GOTO: opcode 0xe5), r0 = XDP_PASS, exit
  const bpf_insn probe[] = {
      {0xe5, 0, 0, 0, 0},
      {BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, XDP_PASS},
      {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
  };
  int fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "fg_may_goto", "GPL", probe,
                         sizeof(probe) / sizeof(probe[0]), nullptr);
  if (fd >= 0) {
    close(fd);
    known = 1;
  } else if (errno == EINVAL) {
    known = 0;  // an opcode the kernel does not know
  }
  return known == 1;
}

int loadedProgramFd(const floodgate_bpf& skeleton) {
  int fd = bpf_program__fd(skeleton.progs.floodgate_xdp);
  return fd >= 0 ? fd : bpf_program__fd(skeleton.progs.floodgate_older);
}

const char* xdpModeName(XdpMode mode) {
  switch (mode) {
    case XdpMode::kNative:
      return "native";
    case XdpMode::kGeneric:
      return "generic";
    case XdpMode::kAuto:
      break;
  }
  return "auto";
}

void captureLibbpfMessages() {
  libbpf_set_print(captureLibbpf);
  libbpf_log.clear();
}

std::string lastLibbpfMessage() {
  // the last non-empty line is the one that names the problem
  std::string log = libbpf_log;
  while (!log.empty() && log.back() == '\n') log.pop_back();
  auto pos = log.rfind('\n');
  return pos == std::string::npos ? log : log.substr(pos + 1);
}

namespace {

// The skeleton opened with `settings` applied, set to load floodgate_older if `older`, else
// floodgate_xdp: the kernel checks only the one loaded.
Result<Skeleton> openProgram(const LoadSettings& settings, bool older) {
  Skeleton skeleton(floodgate_bpf__open());
  if (!skeleton) {
    return Error::failure("cannot open the XDP program: " + std::string(std::strerror(errno)));
  }
  skeleton->rodata->tick_units = settings.tick_units;
  skeleton->rodata->table_slot_mask = settings.table_slots - 1;
  skeleton->rodata->ticks_per_second = settings.ticks_per_second;
  skeleton->rodata->clock_is_test = settings.test_clock ? 1 : 0;
  bpf_map__set_max_entries(skeleton->maps.buckets, settings.table_slots);
  // a set's tags and memory entries of returning sources (struct fg_set), and at least
  // FG_MIN_SET_ELEMENTS elements' memory, so a small table remembers sources enough
  const uint32_t set_elements =
      std::max<uint32_t>(settings.table_slots / FG_TABLE_WAYS, FG_MIN_SET_ELEMENTS);
  skeleton->rodata->sets_mask = set_elements - 1;
  bpf_map__set_max_entries(skeleton->maps.sets, set_elements);
  for (bpf_map* list : {skeleton->maps.allow_v4, skeleton->maps.allow_v6, skeleton->maps.deny_v4,
                        skeleton->maps.deny_v6}) {
    bpf_map__set_max_entries(list, settings.list_max_entries);
  }
  if (Status pinned = setMapPins(skeleton->obj, settings.interface); !pinned) return pinned.error();
  bpf_program__set_autoload(skeleton->progs.floodgate_xdp, !older);
  bpf_program__set_autoload(skeleton->progs.floodgate_older, older);
  return skeleton;
}

bool pinsDoNotFit(const std::string& detail) {
  return detail.find("reuse") != std::string::npos || detail.find("pinned") != std::string::npos;
}

Error loadFailure(int err, const std::string& detail, const LoadSettings& settings) {
  if (err == -EPERM) {
    return Error::failure("the kernel refused to load the XDP program (EPERM): run as root");
  }
  if (pinsDoNotFit(detail)) {
    return Error::failure("the maps pinned in " + pinDirectory(settings.interface) +
                          " do not fit this program (another table size or version): run "
                          "'floodgate detach " +
                          settings.interface + "' first");
  }
  return Error::failure("the kernel refused to load the XDP program (" +
                        std::string(std::strerror(-err)) + "): " + detail +
                        "; a 6.x kernel with BPF and BTF is needed");
}

}  // namespace

Result<Skeleton> loadProgram(const LoadSettings& settings) {
  captureLibbpfMessages();
  bool older = settings.test_older_program || !kernelHasMayGoto();
  auto skeleton = openProgram(settings, older);
  if (!skeleton) return skeleton.error();
  int err = floodgate_bpf__load(skeleton->get());
  // A kernel that has may_goto but refuses floodgate_xdp all the same (its verifier older
  // than the one it is tested on, and less able to prune the loop) still takes the program
  // it took before 6.9. libbpf has unpinned the maps this failed load pinned.
  if (err != 0 && !older && err != -EPERM && !pinsDoNotFit(lastLibbpfMessage())) {
    older = true;
    skeleton = openProgram(settings, older);
    if (!skeleton) return skeleton.error();
    err = floodgate_bpf__load(skeleton->get());
  }
  if (err != 0) return loadFailure(err, lastLibbpfMessage(), settings);
  return std::move(*skeleton);
}

Result<UniqueFd> attachXdp(int program_fd, int ifindex, const std::string& interface, XdpMode mode,
                           XdpMode* used) {
  auto tryMode = [&](XdpMode attempt) {
    LIBBPF_OPTS(bpf_link_create_opts, options);
    options.flags = attempt == XdpMode::kNative ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE;
    return bpf_link_create(program_fd, ifindex, BPF_XDP, &options);
  };
  XdpMode first = mode == XdpMode::kGeneric ? XdpMode::kGeneric : XdpMode::kNative;
  int fd = tryMode(first);
  int err = errno;
  if (fd < 0 && mode == XdpMode::kAuto && err != EBUSY && err != EEXIST) {
    first = XdpMode::kGeneric;
    fd = tryMode(first);
    err = errno;
  }
  if (fd >= 0) {
    *used = first;
    return UniqueFd(fd);
  }
  if (err == EBUSY || err == EEXIST) {
    return Error::failure("'" + interface +
                          "' already has an XDP program that floodgate did not attach: remove it "
                          "with 'ip link set dev " +
                          interface + " xdp off'");
  }
  if (mode == XdpMode::kNative && (err == EOPNOTSUPP || err == EINVAL)) {
    return Error::failure("the driver of '" + interface +
                          "' has no native XDP support: use --mode generic or --mode auto");
  }
  return Error::failure("cannot attach XDP to '" + interface + "' in " + xdpModeName(first) +
                        " mode: " + std::strerror(err));
}

XdpAttachment queryXdp(int ifindex) {
  XdpAttachment out;
  LIBBPF_OPTS(bpf_xdp_query_opts, options);
  if (bpf_xdp_query(ifindex, 0, &options) != 0) {
    out.mode = "none";
    return out;
  }
  out.program_id = options.prog_id;
  switch (options.attach_mode) {
    case XDP_ATTACHED_DRV:
      out.mode = "native";
      break;
    case XDP_ATTACHED_SKB:
      out.mode = "generic";
      break;
    case XDP_ATTACHED_HW:
      out.mode = "offload";
      break;
    default:
      out.mode = "none";
  }
  return out;
}

}  // namespace floodgate
