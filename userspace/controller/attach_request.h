// SPDX-License-Identifier: MIT
// AttachRequest: `floodgate attach IFACE` without --config, as the command line gave it,
// turned into AttachOptions: defaults for a fresh attach, the running limiter's settings
// for what `--replace` was not given.
#pragma once

#include <optional>
#include <string>

#include "controller/xdp_limiter.h"
#include "floodgate/common/result.h"

namespace floodgate {

// What the command line gave; unset (or kAuto) means it was left out.
struct AttachRequest {
  std::string interface;
  XdpMode mode = XdpMode::kAuto;
  std::optional<bool> monitor;
  std::optional<uint32_t> table_slots;
  std::optional<FramePolicy> malformed, fragments, unknown_ext;
  std::optional<LinkControlBudget> link_control;
  // A rate comes with its burst: the one given, or the default for that rate.
  LimitChange limit;
  std::optional<uint8_t> ipv4_prefix, ipv6_prefix;
};

// A fresh attach: AttachOptions' defaults for what was left out, one rule named "default".
Result<AttachOptions> freshAttachOptions(const AttachRequest& request);

// `attach --replace` over the limiter `running`: what was left out keeps its running value,
// and with no limit and no prefix given the running rules stay as they are. Limits or
// prefixes for a limiter running other rules than one rule of the command line (a config's)
// are refused, naming the rules that would be lost. Pure: for unit tests.
Result<AttachOptions> replaceAttachOptions(const AttachRequest& request,
                                           const XdpLimiterStatus& running);

// The options for `attach` (with `replace`, over the limiter attached to the interface, if
// any: its status is read once).
Result<AttachOptions> attachOptions(const AttachRequest& request, bool replace);

}  // namespace floodgate
