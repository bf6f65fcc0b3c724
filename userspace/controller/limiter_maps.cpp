// SPDX-License-Identifier: MIT
// Opening the table of a limiter's pinned maps.
#include "controller/limiter_maps.h"

#include "kernel/pins.h"

namespace floodgate {

Result<LimiterMaps> LimiterMaps::open(const std::string& interface) {
  LimiterMaps maps;
  // The new program would reuse the pins too: only a fresh attach makes maps of this layout.
  const std::string remedy =
      "run 'floodgate detach " + interface + "', then attach again (bucket state starts over)";
  Status status = okStatus();
  maps.forEachMap([&](auto& map) {
    if (!status) return;
    using Map = std::remove_reference_t<decltype(map)>;
    auto opened = Map::openPinned(mapPinPath(interface, map.name()), map.name(), remedy);
    if (!opened) {
      status = opened.error();
      return;
    }
    map = std::move(*opened);
  });
  if (!status) return status.error();
  return maps;
}

}  // namespace floodgate
