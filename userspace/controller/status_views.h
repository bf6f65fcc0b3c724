// SPDX-License-Identifier: MIT
// What `status` and `stats` print: JSON for machines, aligned text for people.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "controller/xdp_limiter.h"

namespace floodgate {

// {"interface": ..., "counters": [{"verdict","reason","packets","bytes"}...], "rules": [...]}
nlohmann::json statsJson(const std::string& interface, const std::vector<CounterRow>& rows,
                         const std::vector<RuleCounters>& rules);
std::string statsText(const std::string& interface, const std::vector<CounterRow>& rows,
                      const std::vector<RuleCounters>& rules);

nlohmann::json statusJson(const XdpLimiterStatus& status);
std::string statusText(const XdpLimiterStatus& status);

}  // namespace floodgate
