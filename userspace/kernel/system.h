// SPDX-License-Identifier: MIT
// Facts and preconditions of the running kernel: privileges, bpffs, the tick clock.
#pragma once

#include <cstdint>
#include <string>

#include "floodgate/common/result.h"

namespace floodgate {

// Fails with how to fix it unless this process may load BPF and attach XDP.
Status checkPrivileges();

// Makes sure a BPF filesystem is mounted at `path` (default /sys/fs/bpf), mounting it if not.
// It mounts one only where the mount outlives this process (see mayMountBpffs).
Status ensureBpffs(const std::string& path = "/sys/fs/bpf");

// Whether a bpffs mounted at `path` by this process would outlive it: only when this process
// is known to share PID 1's mount namespace. `links_readable`: both /proc/self/ns/mnt and
// /proc/1/ns/mnt could be read (EACCES under some init systems and sandboxes);
// `same_namespace`: they name the same namespace (ignored when not readable). A private
// namespace (what 'ip netns exec' makes) or one that cannot be told fails with what to do.
Status mayMountBpffs(bool links_readable, bool same_namespace, const std::string& path);

// CONFIG_HZ of the running kernel, from /proc/config.gz or /boot/config-$(uname -r).
Result<uint32_t> kernelHz();

// The kernel's jiffies counter now (from /proc/timer_list; needs root).
Result<uint64_t> currentJiffies();

// The interface index of `name`, or an error that says the interface does not exist.
Result<int> interfaceIndex(const std::string& name);

// Whether `name`'s frames start with an Ethernet header, which the XDP program parses: an
// Ethernet interface or loopback. An error names the link type of any other (a tunnel's,
// whose frames start at the IP header), on which every packet would pass as non-IP.
Status checkEthernetFrames(const std::string& name);

}  // namespace floodgate
