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

// Removes the pin of an earlier load's TC program (none is fine), so that the next time
// cookies are wanted a program of this floodgate's own build is loaded and attached.
Status forgetSynCookieHandover(const std::string& interface);

// Sets the host up for SYN cookies when `wanted` (tcp_syncookies, then the TC program,
// loaded and pinned if it is not yet, at ingress of `interface`, replacing floodgate's
// earlier one), and takes both down when not: the TC program is loaded, and runs on every
// frame, only while some rule gives cookies.
Status syncSynCookieHost(const std::string& interface, bool wanted);

// Removes the TC program from `interface` (gone already is fine) and puts back the
// tcp_syncookies value ensureSyncookies changed, if it did.
Status takeDownSynCookieHost(const std::string& interface);

}  // namespace floodgate
