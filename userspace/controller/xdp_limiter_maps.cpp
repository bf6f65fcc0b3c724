// SPDX-License-Identifier: MIT
// Opening the table of a limiter's pinned maps.
#include "controller/xdp_limiter_maps.h"

#include "kernel/pins.h"

namespace floodgate {

Result<XdpLimiterMaps> XdpLimiterMaps::open(const std::string& interface) {
  XdpLimiterMaps maps;
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
