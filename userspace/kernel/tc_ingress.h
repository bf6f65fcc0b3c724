// SPDX-License-Identifier: MIT
// floodgate's TC ingress filter: one BPF program under the interface's clsact qdisc, at a
// handle and priority of its own, so it neither replaces nor is replaced by anyone else's.
#pragma once

#include <string>

#include "floodgate/common/result.h"

namespace floodgate {

// Puts `program_fd` at TC ingress of `ifindex` (creating the clsact qdisc if there is none),
// replacing floodgate's earlier filter there if any. `interface` names it in errors.
Status attachTcIngress(int ifindex, int program_fd, const std::string& interface);

// Removes floodgate's filter from TC ingress of `ifindex`; none there is not an error. The
// clsact qdisc stays: other filters may hang from it.
Status detachTcIngress(int ifindex, const std::string& interface);

}  // namespace floodgate
