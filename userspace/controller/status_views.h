// SPDX-License-Identifier: MIT
// What `status` and `stats` print: JSON for machines, aligned text for people.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "controller/xdp_limiter.h"

namespace floodgate {

// {"interface": ..., "counters": [{"verdict","reason","packets","bytes"}...], "rules": [...],
//  "link_control_over_budget": {"packets","bytes"} or null where the program does not count}
nlohmann::json statsJson(const std::string& interface, const std::vector<CounterRow>& rows,
                         const std::vector<RuleCounters>& rules,
                         const std::optional<fg_counter>& link_control_over);
std::string statsText(const std::string& interface, const std::vector<CounterRow>& rows,
                      const std::vector<RuleCounters>& rules,
                      const std::optional<fg_counter>& link_control_over);

nlohmann::json statusJson(const XdpLimiterStatus& status);
std::string statusText(const XdpLimiterStatus& status);

}  // namespace floodgate
