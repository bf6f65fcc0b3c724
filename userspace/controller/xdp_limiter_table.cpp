// SPDX-License-Identifier: MIT
// Reading the source table whole (for `top`), the event counters and the link-control count.
#include <bpf/bpf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "controller/xdp_limiter.h"
#include "kernel/pins.h"
#include "kernel/xdp_neighbour.h"

namespace floodgate {

Result<uint32_t> XdpLimiter::tableSlots() const {
  bpf_map_info info{};
  uint32_t info_len = sizeof(info);
  if (bpf_obj_get_info_by_fd(maps_.buckets.fd(), &info, &info_len) != 0) {
    return Error::failure(std::string("cannot read the source table's size: ") +
                          std::strerror(errno));
  }
  return info.max_entries;
}

Result<uint32_t> XdpLimiter::listMaxEntries() const {
  bpf_map_info info{};
  uint32_t info_len = sizeof(info);
  if (bpf_obj_get_info_by_fd(maps_.lists[FG_LIST_ALLOW].v4().fd(), &info, &info_len) != 0) {
    return Error::failure(std::string("cannot read the lists' size: ") + std::strerror(errno));
  }
  return info.max_entries;
}

Result<std::vector<fg_slot>> XdpLimiter::slots() const {
  auto slot_count = tableSlots();
  if (!slot_count) return slot_count.error();
  // Through the mapping: a copy of 16 MiB costs milliseconds, a syscall per slot seconds.
  const size_t bytes = static_cast<size_t>(*slot_count) * sizeof(fg_slot);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t length = (bytes + page - 1) / page * page;
  void* memory = mmap(nullptr, length, PROT_READ, MAP_SHARED, maps_.buckets.fd(), 0);
  if (memory == MAP_FAILED) {
    return Error::failure(std::string("cannot map the source table: ") + std::strerror(errno) +
                          " (a limiter attached by an older floodgate: reattach it)");
  }
  std::vector<fg_slot> out(*slot_count);
  std::memcpy(out.data(), memory, bytes);
  munmap(memory, length);
  return out;
}

Result<EventStats> XdpLimiter::eventStats() const {
  auto values = maps_.event_stats.lookup(0);
  if (!values) return values.error();
  EventStats out;
  for (const fg_event_stats& cpu : *values) {
    out.emitted += cpu.emitted;
    out.suppressed += cpu.suppressed;
    out.lost += cpu.lost;
  }
  return out;
}

Result<std::optional<fg_counter>> XdpLimiter::linkControlOverBudget() const {
  // Opened at each read, as the next-program slot is: a replace adds the pin under a
  // limiter a daemon holds open. Read only when the program that runs uses it: a pin that a
  // failed replace, or an older floodgate's replace, left behind counts nothing.
  const std::string path = mapPinPath(interface_, kLinkControlOverMap);
  const std::optional<fg_counter> none;
  if (access(path.c_str(), F_OK) != 0 && errno == ENOENT) return none;
  auto map = PerCpuArray<fg_counter>::openPinned(path, kLinkControlOverMap);
  if (!map) return map.error();
  // a program whose maps cannot be read (no CAP_SYS_ADMIN, or gone since) is taken to use it
  if (uint32_t program = runningProgramId(); program) {
    auto info = mapInfo(map->fd(), kLinkControlOverMap);
    if (!info) return info.error();
    auto used = programMapIds(program);
    if (used && std::find(used->begin(), used->end(), info->id) == used->end()) return none;
  }
  auto values = map->lookup(0);
  if (!values) return values.error();
  fg_counter out{};
  for (const fg_counter& cpu : *values) {
    out.packets += cpu.packets;
    out.bytes += cpu.bytes;
  }
  return std::optional<fg_counter>(out);
}

}  // namespace floodgate
