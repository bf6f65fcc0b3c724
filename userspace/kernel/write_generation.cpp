// SPDX-License-Identifier: MIT
// The write generation of a limiter: a pinned array of one count, made on first use.
#include "kernel/write_generation.h"

#include <bpf/bpf.h>
#include <linux/bpf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "kernel/bpf_map.h"
#include "kernel/pins.h"
#include "kernel/unique_fd.h"

namespace floodgate {
namespace {

using GenerationMap = BpfMap<uint32_t, uint64_t>;

Result<GenerationMap> openGeneration(const std::string& interface) {
  auto map =
      GenerationMap::openPinned(mapPinPath(interface, kWriteGenerationName), kWriteGenerationName);
  if (!map) return map.error();
  // sizes alone would pass a per-CPU array, whose lookup writes a value per CPU
  auto info = mapInfo(map->fd(), kWriteGenerationName);
  if (!info) return info.error();
  if (info->type != BPF_MAP_TYPE_ARRAY || info->max_entries < 1) {
    return Error::failure("the pinned map '" + std::string(kWriteGenerationName) +
                          "' is not an array of one count: run 'floodgate detach " + interface +
                          "', then attach again");
  }
  return map;
}

bool pinned(const std::string& path) { return access(path.c_str(), F_OK) == 0 || errno != ENOENT; }

}  // namespace

Result<std::optional<uint64_t>> readWriteGeneration(const std::string& interface) {
  if (!pinned(mapPinPath(interface, kWriteGenerationName))) return std::optional<uint64_t>();
  auto map = openGeneration(interface);
  if (!map) return map.error();
  auto count = map->lookup(0);
  if (!count) return count.error();
  return std::optional<uint64_t>(*count);
}

Result<uint64_t> bumpWriteGeneration(const std::string& interface) {
  const std::string path = mapPinPath(interface, kWriteGenerationName);
  if (!pinned(path)) {
    if (!pinned(mapPinPath(interface, "settings_map"))) {
      return Error::failure("the limiter of '" + interface + "' is being detached");
    }
    UniqueFd made(bpf_map_create(BPF_MAP_TYPE_ARRAY, kWriteGenerationName, sizeof(uint32_t),
                                 sizeof(uint64_t), 1, nullptr));
    if (!made.valid()) {
      return Error::failure(std::string("cannot make the write count: ") + std::strerror(errno));
    }
    // another process that pinned one meanwhile (EEXIST) is as good
    if (bpf_obj_pin(made.get(), path.c_str()) != 0 && errno != EEXIST) {
      return Error::failure("cannot pin the write count at " + path + ": " + std::strerror(errno));
    }
  }
  auto map = openGeneration(interface);
  if (!map) return map.error();
  auto now = map->lookup(0);
  if (!now) return now.error();
  const uint64_t next = *now + 1;
  if (Status s = map->update(0, next); !s) return s.error();
  return next;
}

}  // namespace floodgate
