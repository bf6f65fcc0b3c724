// SPDX-License-Identifier: MIT
// ListenAddress: `ADDR:PORT` (or `[V6]:PORT`) for the metrics endpoint.
#pragma once

#include <cstdint>
#include <string>

#include "floodgate/common/result.h"

namespace floodgate::daemon {

struct ListenAddress {
  std::string host = "127.0.0.1";
  uint16_t port = 9477;
};

// A usage error names the expected form.
Result<ListenAddress> parseListenAddress(const std::string& text);

}  // namespace floodgate::daemon
