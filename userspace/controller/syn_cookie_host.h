// SPDX-License-Identifier: MIT
// What SYN cookies at the NIC need of the host besides the XDP program: floodgate's TC
// ingress program, which hands the connections of valid cookie ACKs to their listener
// (bpf_sk_assign_tcp_reqsk), and net.ipv4.tcp_syncookies on, without which the kernel
// ignores those connections. Attach sets both up; detach takes both down and puts back the
// sysctl value it changed.
#pragma once

#include <string>
#include <vector>

#include "floodgate/common/result.h"
#include "floodgate_shared.h"

namespace floodgate {

// Whether some rule of `rules` gives SYN cookies.
bool usesSynCookies(const std::vector<fg_rule>& rules);

// Attaches the TC program `tc_program_fd` at ingress of `interface`, replacing floodgate's
// earlier one. Always, cookie rules or not: a reload may add one, and the program costs
// a frame without the XDP program's mark one read of its metadata.
Status setUpSynCookieHost(const std::string& interface, int tc_program_fd);

// Makes net.ipv4.tcp_syncookies (of this process's network namespace) at least 1, noting
// the value it found under /run/floodgate when it was 0, so detach can put it back.
Status ensureSyncookies(const std::string& interface);

// Removes the TC program from `interface` (gone already is fine) and puts back the
// tcp_syncookies value ensureSyncookies changed, if it did.
Status takeDownSynCookieHost(const std::string& interface);

}  // namespace floodgate
