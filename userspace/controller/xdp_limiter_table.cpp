// SPDX-License-Identifier: MIT
// Reading the source table whole (for `top`) and the event counters.
#include <bpf/bpf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "controller/xdp_limiter.h"

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
  if (maps_.link_ctl_over.fd() < 0) return std::optional<fg_counter>();
  auto values = maps_.link_ctl_over.lookup(0);
  if (!values) return values.error();
  fg_counter out{};
  for (const fg_counter& cpu : *values) {
    out.packets += cpu.packets;
    out.bytes += cpu.bytes;
  }
  return std::optional<fg_counter>(out);
}

}  // namespace floodgate
