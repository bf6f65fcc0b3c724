// SPDX-License-Identifier: MIT
// Facts and preconditions of the running kernel: privileges, bpffs, the tick clock.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"

namespace floodgate {

// Fails with how to fix it unless this process may load BPF and attach XDP.
Status checkPrivileges();

// Makes sure a BPF filesystem is mounted at `path` (default /sys/fs/bpf), mounting it if not.
Status ensureBpffs(const std::string& path = "/sys/fs/bpf");

// CONFIG_HZ of the running kernel, from /proc/config.gz or /boot/config-$(uname -r).
Result<uint32_t> kernelHz();

// The kernel's jiffies counter now (from /proc/timer_list; needs root).
Result<uint64_t> currentJiffies();

// The interface index of `name`, or an error that says the interface does not exist.
Result<int> interfaceIndex(const std::string& name);

}  // namespace floodgate
