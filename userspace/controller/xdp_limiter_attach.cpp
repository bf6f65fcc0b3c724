// SPDX-License-Identifier: MIT
// Where the limiter runs and how it leaves: attaching to the XDP hook or into an operator's
// prog array, replacing in place, and detaching so that only floodgate leaves the path.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "controller/merged_packet_warning.h"
#include "controller/reload_warnings.h"
#include "controller/syn_cookie_host.h"
#include "controller/xdp_limiter.h"
#include "floodgate/common/text.h"
#include "kernel/attach_lock.h"
#include "kernel/pins.h"
#include "kernel/system.h"

namespace floodgate {
namespace {

std::string describeSlot(uint32_t slot, const ProgArray& array) {
  return "slot " + std::to_string(slot) + " of prog array " + array.name() + " (id " +
         std::to_string(array.id()) + ")";
}

// The id of the program pinned at `path`, 0 when there is none.
uint32_t pinnedProgramId(const std::string& path) {
  UniqueFd fd(bpf_obj_get(path.c_str()));
  if (!fd.valid()) return 0;
  auto info = programInfo(fd.get());
  return info ? info->id : 0;
}

Status multiprogUnavailable() {
  ExtProbe probe = probeExtPrograms();
  const std::string chain =
      ": put floodgate beside other XDP programs by chaining instead ('floodgate chain set "
      "IFACE', or 'floodgate attach IFACE --into-prog-array PATH --slot N')";
  if (!probe.available()) {
    return Error::failure(
        "--multiprog needs libxdp's dispatcher, which needs freplace (ext) programs, and " +
        probe.describe() + chain);
  }
  return Error::failure("--multiprog (libxdp's dispatcher) is not part of this floodgate (" +
                        probe.describe() + ")" + chain);
}

// The operator's prog array for a fresh --into-prog-array, with its slot checked empty.
Result<ProgArray> openRootArray(const AttachOptions& options) {
  auto root = ProgArray::openPinned(options.root_prog_array);
  if (!root) return root.error();
  if (options.root_slot >= root->slots()) {
    return Error::usage(options.root_prog_array + " has " + std::to_string(root->slots()) +
                        " slots, so --slot is at most " + std::to_string(root->slots() - 1) +
                        ", not " + std::to_string(options.root_slot));
  }
  auto held = root->programIn(options.root_slot);
  if (!held) return held.error();
  if (*held) {
    auto info = programInfoOfId(**held);
    return Error::failure(describeSlot(options.root_slot, *root) + " holds " +
                          (info ? describeProgram(*info) : "program id " + std::to_string(**held)) +
                          ": choose an empty slot, or put that program behind floodgate "
                          "('floodgate chain set " +
                          options.interface + " --pinned PATH') once floodgate has a slot");
  }
  return root;
}

// A limiter in generic mode (its own, or its root program's in a prog array) meets a flow's
// segments as the kernel merged them: said at every attach, replace and relink, as the
// frame-size warnings are, since the features may have changed meanwhile.
void warnOfMergedPackets(const std::string& interface, bool generic,
                         std::vector<std::string>& warnings) {
  if (!generic) return;
  if (auto warning = mergedPacketWarning(interface)) warnings.push_back(*warning);
}

}  // namespace

std::optional<std::pair<uint32_t, ProgArraySlot>> XdpLimiter::progArraySlot() const {
  auto root = ProgArray::openPinned(rootArrayPinPath(interface_));
  if (!root) return std::nullopt;
  uint32_t id = pinnedProgramId(programPinPath(interface_));
  ProgArraySlot where{root->id(), root->name(), id ? root->slotOf(id) : std::nullopt};
  return std::make_pair(id, where);
}

std::optional<bpf_link_info> XdpLimiter::pinnedLinkInfo() const {
  UniqueFd link(bpf_obj_get(linkPinPath(interface_).c_str()));
  // the kernel fills in any object's info: a map's read as a link's would name a program
  if (!link.valid() || bpfObjectKind(link.get()) != "bpf-link") return std::nullopt;
  bpf_link_info info{};
  uint32_t info_len = sizeof(info);
  if (bpf_obj_get_info_by_fd(link.get(), &info, &info_len) != 0) return std::nullopt;
  return info;
}

uint32_t XdpLimiter::runningProgramId() const {
  if (auto info = pinnedLinkInfo(); info) return info->prog_id;
  // in a prog array: the program's pin follows its slot (a replace pins the new one)
  return pinnedProgramId(programPinPath(interface_));
}

std::optional<bool> XdpLimiter::programUsesMaps(uint32_t program_id) const {
  // by the settings map, which every floodgate program uses
  auto used = programMapIds(program_id);
  if (!used) return std::nullopt;
  auto settings = mapInfo(maps_.settings.fd(), maps_.settings.name());
  if (!settings) return std::nullopt;
  return std::find(used->begin(), used->end(), settings->id) != used->end();
}

XdpLimiter::HookLink XdpLimiter::hookLink(const std::string& interface) {
  if (!checkInterfaceName(interface)) return HookLink::kNone;
  UniqueFd link(bpf_obj_get(linkPinPath(interface).c_str()));
  if (!link.valid()) return HookLink::kNone;
  bpf_link_info info{};
  uint32_t info_len = sizeof(info);
  // a link the kernel cannot describe is taken to be where it was put
  if (bpf_obj_get_info_by_fd(link.get(), &info, &info_len) != 0) return HookLink::kLive;
  if (info.xdp.ifindex == 0) return HookLink::kSevered;
  // On a device of another name here: the one it was made for was renamed (and another may
  // have taken its name). Not taken from it: an index of another namespace's device could
  // name one here by chance, so this is only said, never acted on. An index that names no
  // device here is another namespace's (pins are named by interface, not by namespace: an
  // `nsenter` into a container, a daemon of its own there), and not this limiter's to take.
  char name[IF_NAMESIZE] = {};
  if (if_indextoname(info.xdp.ifindex, name) != nullptr && interface != name) {
    return HookLink::kMoved;
  }
  return HookLink::kLive;
}

Result<AttachReport> XdpLimiter::relink(const std::string& interface, XdpMode mode) {
  if (Status s = checkInterfaceName(interface); !s) return s.error();
  if (Status s = checkPrivileges(); !s) return s.error();
  auto attaching = AttachLock::acquire();
  if (!attaching) return attaching.error();
  AttachReport report;
  if (Status s = relinkLocked(interface, mode, report); !s) return s.error();
  if (report.replaced) {
    warnOfMergedPackets(interface, report.mode == XdpMode::kGeneric, report.warnings);
  }
  return report;
}

Status XdpLimiter::relinkLocked(const std::string& interface, XdpMode mode, AttachReport& report) {
  if (hookLink(interface) != HookLink::kSevered) return okStatus();  // live, or relinked since
  UniqueFd old(bpf_obj_get(linkPinPath(interface).c_str()));
  bpf_link_info info{};
  uint32_t info_len = sizeof(info);
  if (!old.valid() || bpf_obj_get_info_by_fd(old.get(), &info, &info_len) != 0) {
    return Error::failure("cannot read the XDP link pinned at " + linkPinPath(interface) + ": " +
                          std::strerror(errno));
  }
  UniqueFd program(bpf_prog_get_fd_by_id(info.prog_id));
  if (!program.valid()) {
    return Error::failure("cannot open floodgate's program (id " + std::to_string(info.prog_id) +
                          ") of '" + interface + "': " + std::strerror(errno));
  }
  auto ifindex = interfaceIndex(interface);
  if (!ifindex) return ifindex.error();
  if (Status s = checkEthernetFrames(interface); !s) return s;
  // the TC handover of cookie connections went with the old device too: back before the
  // program, as at attach, so no cookie's ACK goes by without it
  if (access(tcProgramPinPath(interface).c_str(), F_OK) == 0) {
    if (Status s = syncSynCookieHost(interface, true); !s) {
      return Error::failure("SYN cookies on '" + interface +
                            "' cannot hand connections over: " + s.error().message);
    }
  }
  const std::string pin = linkPinPath(interface), fresh = pin + "_relinked";
  // one a relink that died between the pin and the rename left: detached now, not when
  // the kernel frees it, so the hook is free for the attach
  if (UniqueFd left(bpf_obj_get(fresh.c_str())); left.valid()) (void)bpf_link_detach(left.get());
  (void)unlink(fresh.c_str());
  auto link = attachXdp(program.get(), *ifindex, interface, mode, &report.mode);
  if (!link) return link.error();
  // The new link is pinned under a name of its own, then renamed over the old one's pin, so
  // the maps are never pinned without a link (what a crashed attach leaves, and the next
  // attach clears). Should either step fail, the new link is detached and the hook left
  // free; the old pin is still there.
  if (bpf_obj_pin(link->get(), fresh.c_str()) != 0 ||
      std::rename(fresh.c_str(), pin.c_str()) != 0) {
    const int err = errno;
    (void)bpf_link_detach(link->get());
    (void)unlink(fresh.c_str());
    return Error::failure("cannot pin the new XDP link of '" + interface + "' at " + pin + ": " +
                          std::strerror(err));
  }
  report.replaced = true;
  report.warnings.push_back("the limiter of '" + interface +
                            "' had been cut off from it (the interface was deleted and made "
                            "again): attached to it again, its state kept");
  if (mode == XdpMode::kAuto && report.mode == XdpMode::kGeneric) {
    report.warnings.push_back("the driver of '" + interface +
                              "' has no native XDP: attached in generic mode, which is slower");
  }
  return okStatus();
}

Result<AttachReport> XdpLimiter::attach(const AttachOptions& options) {
  const std::string& iface = options.interface;
  if (Status s = checkInterfaceName(iface); !s) return s.error();
  if (Status s = validate(options); !s) return s.error();
  if (options.multiprog) return multiprogUnavailable().error();
  const bool into_array = !options.root_prog_array.empty();
  if (into_array && options.mode != XdpMode::kAuto) {
    return Error::usage("--mode is the root program's with --into-prog-array: drop --mode");
  }
  if (Status s = checkPrivileges(); !s) return s.error();
  auto ifindex = interfaceIndex(iface);
  if (!ifindex) return ifindex.error();
  if (Status s = checkEthernetFrames(iface); !s) return s.error();
  // held from the look at the bpffs and the pins to the last pin written (released on every
  // return)
  auto attaching = AttachLock::acquire();
  if (!attaching) return attaching.error();
  if (Status s = ensureBpffs(); !s) return s.error();

  const bool on_hook = access(linkPinPath(iface).c_str(), F_OK) == 0;
  const bool in_array = access(rootArrayPinPath(iface).c_str(), F_OK) == 0;
  const bool attached = on_hook || in_array;
  AttachReport report;
  // A limiter cut off from its interface (deleted and made again) is attached to it again
  // first, its state kept; the config asked for then replaces its program as --replace does.
  const bool severed = on_hook && !into_array && hookLink(iface) == HookLink::kSevered;
  if (severed) {
    if (Status s = relinkLocked(iface, options.mode, report); !s) return s.error();
  }
  if (attached && !options.replace && !severed) {
    return Error::failure("floodgate is already attached to '" + iface +
                          "': use --replace to swap it (state is kept) or detach it first");
  }
  if (attached && on_hook && into_array) {
    return Error::usage("floodgate owns the XDP hook of '" + iface +
                        "': --into-prog-array needs a fresh attach ('floodgate detach " + iface +
                        "' first; bucket state starts over)");
  }
  // Pins without a link are what a crashed attach left behind: nothing worth keeping.
  if (!attached) {
    if (Status s = removePins(iface); !s) return s.error();
  }
  std::optional<ProgArray> root;
  if (into_array && !attached) {
    auto opened = openRootArray(options);
    if (!opened) return opened.error();
    root = std::move(*opened);
  }
  // A fresh attach that fails leaves nothing behind; a failed replace leaves the old one.
  auto fail = [&](Error error) -> Result<AttachReport> {
    if (!attached) (void)takeDownSynCookieHost(iface);
    if (!attached) (void)removePins(iface);
    return error;
  };

  AttachOptions fitted = options;
  std::optional<std::pair<uint32_t, ProgArraySlot>> running_slot;
  if (attached) {
    auto running = openMaps(iface);
    if (!running) return running.error();
    if (in_array) {
      running_slot = running->progArraySlot();
      if (!running_slot || !running_slot->second.slot) {
        return Error::failure("floodgate's program on '" + iface +
                              "' is no longer in its prog array (its slot was emptied or "
                              "replaced): 'floodgate detach " +
                              iface + "' and attach again");
      }
      if (into_array) {
        auto asked = ProgArray::openPinned(options.root_prog_array);
        if (!asked) return asked.error();
        if (asked->id() != running_slot->second.map_id ||
            options.root_slot != *running_slot->second.slot) {
          return Error::usage("floodgate runs in slot " +
                              std::to_string(*running_slot->second.slot) + " of prog array " +
                              running_slot->second.map_name +
                              ", and --replace keeps it there: to move it, 'floodgate detach " +
                              iface + "' and attach again");
        }
      }
      if (options.mode != XdpMode::kAuto) {
        return Error::usage("--mode is the root program's when floodgate runs in a prog array");
      }
    }
    if (Status s = running->fitToRunning(fitted, report.warnings); !s) return s.error();
  }
  auto loaded = load(fitted);
  if (!loaded) return fail(loaded.error());
  report.write_generation = loaded->limiter.written_generation_;
  if (auto program = programInfo(loaded->programFd()); program) report.program_id = program->id;
  if (!attached) {
    // the handover before the program: no cookie's ACK ever goes by without it
    auto rules = loaded->limiter.activeRules();
    if (!rules) return fail(rules.error());
    if (Status s = syncSynCookieHost(iface, usesSynCookies(*rules)); !s) {
      (void)takeDownSynCookieHost(iface);
      return fail(s.error());
    }
  }

  if (in_array) {
    // the slot takes the new program in one store; the pin follows it
    auto array = ProgArray::openPinned(rootArrayPinPath(iface));
    if (!array) return array.error();
    uint32_t slot = *running_slot->second.slot;
    if (Status s = array->set(slot, loaded->programFd()); !s) return s.error();
    (void)unlink(programPinPath(iface).c_str());
    if (bpf_obj_pin(loaded->programFd(), programPinPath(iface).c_str()) != 0) {
      report.warnings.push_back("cannot pin the program at " + programPinPath(iface) + ": " +
                                std::strerror(errno) + "; status cannot find its slot");
    }
    report.replaced = true;
    report.prog_array_slot = describeSlot(slot, *array);
    warnOfMergedPackets(iface, queryXdp(*ifindex).mode == "generic", report.warnings);
    return report;
  }
  if (attached) {
    UniqueFd link(bpf_obj_get(linkPinPath(iface).c_str()));
    if (!link.valid() || bpf_link_update(link.get(), loaded->programFd(), nullptr) != 0) {
      return Error::failure("cannot swap the program on '" + iface + "': " + std::strerror(errno));
    }
    report.replaced = true;
    report.mode = queryXdp(*ifindex).mode == "generic" ? XdpMode::kGeneric : XdpMode::kNative;
    warnOfMergedPackets(iface, report.mode == XdpMode::kGeneric, report.warnings);
    return report;
  }
  if (root) {
    // the program's pin first and the array's last: the array's pin says "attached"
    if (bpf_obj_pin(loaded->programFd(), programPinPath(iface).c_str()) != 0) {
      return fail(Error::failure("cannot pin the program at " + programPinPath(iface) + ": " +
                                 std::strerror(errno)));
    }
    if (Status s = root->set(options.root_slot, loaded->programFd()); !s) return fail(s.error());
    if (bpf_obj_pin(root->fd(), rootArrayPinPath(iface).c_str()) != 0) {
      int err = errno;
      (void)root->clear(options.root_slot);
      return fail(Error::failure("cannot pin the prog array at " + rootArrayPinPath(iface) + ": " +
                                 std::strerror(err)));
    }
    report.prog_array_slot = describeSlot(options.root_slot, *root);
    warnOfMergedPackets(iface, queryXdp(*ifindex).mode == "generic", report.warnings);
    return report;
  }
  auto link = attachXdp(loaded->programFd(), *ifindex, iface, options.mode, &report.mode);
  if (!link) return fail(link.error());
  if (options.mode == XdpMode::kAuto && report.mode == XdpMode::kGeneric) {
    report.warnings.push_back("the driver of '" + iface +
                              "' has no native XDP: attached in generic mode, which is slower");
  }
  warnOfMergedPackets(iface, report.mode == XdpMode::kGeneric, report.warnings);
  if (bpf_obj_pin(link->get(), linkPinPath(iface).c_str()) != 0) {
    return fail(Error::failure("cannot pin the XDP link at " + linkPinPath(iface) + ": " +
                               std::strerror(errno)));
  }
  return report;
}

Status XdpLimiter::fitToRunning(AttachOptions& options, std::vector<std::string>& warnings) const {
  // A program that looks for sources elsewhere in the table would start every bucket over
  // while the old slots linger: only a fresh attach makes a table of this layout.
  auto running = maps_.settings.lookup(0);
  if (!running) return running.error();
  if (running->table_layout != FG_TABLE_LAYOUT) {
    return Error::failure("the limiter on '" + interface_ +
                          "' was attached by a floodgate whose bucket table is laid out "
                          "differently: run 'floodgate detach " +
                          interface_ + "', then attach again (bucket state starts over)");
  }
  // The new program reuses the pinned maps, and the kernel refuses a map of another size.
  // Like reload, a replace keeps the running sizes and says so.
  auto slots = tableSlots();
  if (!slots) return slots.error();
  auto lists = listMaxEntries();
  if (!lists) return lists.error();
  if (options.mode != XdpMode::kAuto) {
    auto ifindex = interfaceIndex(interface_);
    std::string running = ifindex ? queryXdp(*ifindex).mode : "unknown";
    if (running != xdpModeName(options.mode)) {
      return Error::usage("'" + interface_ + "' runs in " + running +
                          " mode, and --replace swaps the program on its link, which keeps its "
                          "mode: for " +
                          xdpModeName(options.mode) + " mode, 'floodgate detach " + interface_ +
                          "' and attach again (bucket state starts over)");
    }
  }
  XdpLimiterStatus kept;  // the sizes alone: a mode other than the link's is refused above
  kept.interface = interface_;
  kept.table_slots = *slots;
  kept.list_max_entries = *lists;
  for (std::string& warning : reloadKeepsWarnings(kept, options)) {
    warnings.push_back(std::move(warning));
  }
  options.table_slots = *slots;
  options.list_max_entries = *lists;
  return okStatus();
}

Result<DetachReport> XdpLimiter::detach(const std::string& interface, bool keep_next) {
  if (Status s = checkInterfaceName(interface); !s) return s.error();
  if (Status s = checkPrivileges(); !s) return s.error();
  const auto not_attached = [&] {
    return Error::failure("floodgate is not attached to '" + interface +
                          "' (see 'floodgate status')");
  };
  if (access(pinDirectory(interface).c_str(), F_OK) != 0) return not_attached();
  // an attach or detach of it may be under way: what is pinned is looked at again once done
  auto detaching = AttachLock::acquire();
  if (!detaching) return detaching.error();
  if (access(pinDirectory(interface).c_str(), F_OK) != 0) return not_attached();
  // and once no write is under way: a reload finishing meanwhile would pin its write count
  // into the directory being removed, which then cannot be (a write after this finds the
  // pins gone and pins nothing)
  WriterLock writer(pinDirectory(interface));
  auto writing = writer.acquire(interface);
  if (!writing) return writing.error();
  DetachReport report;
  // Held across the removal of the pins, which would otherwise free it with the array.
  UniqueFd next;
  std::optional<ProgramInfo> next_info;
  if (auto array = ProgArray::openPinned(mapPinPath(interface, "next_program")); array) {
    if (auto id = array->programIn(FG_NEXT_PROGRAM_SLOT); id && *id) {
      next = UniqueFd(bpf_prog_get_fd_by_id(**id));
      if (next.valid()) {
        if (auto info = programInfo(next.get()); info) next_info = *info;
      }
    }
  }
  const std::string next_name = next_info ? describeProgram(*next_info) : "";
  // the TC handover first: without the XDP program nothing marks frames for it
  if (Status s = takeDownSynCookieHost(interface); !s) return s.error();

  if (auto root = ProgArray::openPinned(rootArrayPinPath(interface)); root) {
    uint32_t own_id = pinnedProgramId(programPinPath(interface));
    std::optional<uint32_t> slot = own_id ? root->slotOf(own_id) : std::nullopt;
    if (!slot) {
      report.notes.push_back("floodgate was no longer in prog array " + root->name() +
                             ": it is left as it is");
    } else if (next_info && keep_next) {
      // one store: the root program's next tail call reaches the next program directly
      if (Status s = root->set(*slot, next.get()); !s) return s.error();
      report.notes.push_back(describeSlot(*slot, *root) + " now holds " + next_name +
                             ", the program that was behind floodgate");
    } else {
      if (Status s = root->clear(*slot); !s) return s.error();
      report.notes.push_back(
          describeSlot(*slot, *root) + " is empty now" +
          (next_info ? "; " + next_name + ", behind floodgate, was not kept" : ""));
    }
    if (Status s = removePins(interface); !s) return s.error();
    return report;
  }

  auto ifindex = interfaceIndex(interface);
  const std::string mode = ifindex ? queryXdp(*ifindex).mode : "";
  // Detach the link itself, now: dropping its last pin frees it only later, on a kernel
  // worker, and the hook must be free before the next program can take it.
  if (UniqueFd link(bpf_obj_get(linkPinPath(interface).c_str())); link.valid()) {
    if (bpf_link_detach(link.get()) != 0 && errno != EINVAL && errno != ENOLINK) {
      return Error::failure("cannot detach the XDP link of '" + interface +
                            "': " + std::strerror(errno));
    }
  }
  if (Status s = removePins(interface); !s) return s.error();
  if (!next_info) return report;
  if (!keep_next) {
    report.notes.push_back(next_name + ", the program behind floodgate, was not kept: '" +
                           interface + "' has no XDP program now");
    return report;
  }
  if (!ifindex) {
    report.notes.push_back(next_name + ", the program behind floodgate, was not kept: '" +
                           interface + "' is not in this network namespace");
    return report;
  }
  const bool generic = mode == "generic";
  const uint32_t flags =
      XDP_FLAGS_UPDATE_IF_NOEXIST | (generic ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE);
  if (bpf_xdp_attach(*ifindex, next.get(), flags, nullptr) != 0) {
    report.notes.push_back(next_name +
                           ", the program behind floodgate, could not take its place (" +
                           std::strerror(errno) + "): '" + interface + "' has no XDP program now");
    return report;
  }
  report.notes.push_back(next_name + ", the program that was behind floodgate, now runs on '" +
                         interface + "' directly (" + (generic ? "generic" : "native") +
                         " mode; 'ip link set dev " + interface +
                         (generic ? " xdpgeneric" : " xdpdrv") + " off' removes it)");
  return report;
}

}  // namespace floodgate
