// SPDX-License-Identifier: MIT
// Checks and readings of the running kernel that the controller needs before loading.
#include "kernel/system.h"

#include <linux/magic.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace floodgate {
namespace {

// The effective capability bits of this process, from /proc/self/status.
uint64_t effectiveCapabilities() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("CapEff:", 0) == 0) return std::stoull(line.substr(7), nullptr, 16);
  }
  return 0;
}

constexpr int kCapNetAdmin = 12;
constexpr int kCapSysAdmin = 21;
constexpr int kCapBpf = 39;

// Reads a whole file that may be gzip-compressed (zlib reads plain files as they are).
bool readMaybeCompressed(const std::string& path, std::string& out) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (!file) return false;
  char buffer[65536];
  int n;
  while ((n = gzread(file, buffer, sizeof(buffer))) > 0) out.append(buffer, static_cast<size_t>(n));
  gzclose(file);
  return !out.empty();
}

}  // namespace

Status checkPrivileges() {
  if (geteuid() == 0) return okStatus();
  uint64_t caps = effectiveCapabilities();
  bool bpf = caps & ((1ULL << kCapBpf) | (1ULL << kCapSysAdmin));
  bool net = caps & (1ULL << kCapNetAdmin);
  if (bpf && net) return okStatus();
  return Error::failure(
      "this command works on BPF maps and XDP, which needs privileges: run it as root (sudo) "
      "or with CAP_BPF and CAP_NET_ADMIN");
}

Status ensureBpffs(const std::string& path) {
  struct statfs fs {};
  if (statfs(path.c_str(), &fs) == 0 && fs.f_type == BPF_FS_MAGIC) return okStatus();
  std::error_code own_error, init_error;
  auto own = std::filesystem::read_symlink("/proc/self/ns/mnt", own_error);
  auto init = std::filesystem::read_symlink("/proc/1/ns/mnt", init_error);
  if (Status s = mayMountBpffs(!own_error && !init_error, own == init, path); !s) return s;
  mkdir(path.c_str(), 0700);
  if (mount("bpf", path.c_str(), "bpf", 0, "mode=0700") == 0) return okStatus();
  return Error::failure("no BPF filesystem at " + path + " and mounting one failed (" +
                        std::strerror(errno) + "): mount it with 'mount -t bpf bpf " + path + "'");
}

Status mayMountBpffs(bool links_readable, bool same_namespace, const std::string& path) {
  // A bpffs mounted in a private mount namespace dies with this process, and with it the
  // pins that keep the limiter attached: refuse rather than report an attach that vanishes.
  if (links_readable && same_namespace) return okStatus();
  const std::string where =
      links_readable ? "this private mount namespace (as 'ip netns exec' makes)"
                     : "a mount namespace that cannot be compared with PID 1's (/proc/1/ns/mnt "
                       "is unreadable), which may be private (as 'ip netns exec' makes)";
  return Error::failure("no BPF filesystem at " + path + " in " + where +
                        ", so pins would vanish on exit: run floodgate under "
                        "'nsenter --net=/run/netns/NAME' instead, or mount bpffs first "
                        "('mount -t bpf bpf " +
                        path + "')");
}

Result<uint32_t> kernelHz() {
  struct utsname uts {};
  uname(&uts);
  for (std::string path :
       {std::string("/proc/config.gz"), "/boot/config-" + std::string(uts.release)}) {
    std::string config;
    if (!readMaybeCompressed(path, config)) continue;
    std::istringstream lines(config);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.rfind("CONFIG_HZ=", 0) == 0)
        return static_cast<uint32_t>(std::stoul(line.substr(10)));
    }
  }
  return Error::failure("cannot read the kernel's CONFIG_HZ from /proc/config.gz or /boot/config-" +
                        std::string(uts.release) +
                        ": load the configs module (modprobe configs) or install the "
                        "kernel's config file");
}

Result<uint64_t> currentJiffies() {
  std::ifstream timers("/proc/timer_list");
  std::string line;
  while (std::getline(timers, line)) {
    if (line.rfind("jiffies: ", 0) == 0) return std::stoull(line.substr(9));
  }
  return Error::failure("cannot read jiffies from /proc/timer_list (needs root)");
}

Status checkEthernetFrames(const std::string& name) {
  // by ioctl on a socket of this network namespace: /sys may show another one's interfaces
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Error::failure(std::string("cannot open a socket: ") + std::strerror(errno));
  ifreq request{};
  name.copy(request.ifr_name, IFNAMSIZ - 1);
  const int got = ioctl(fd, SIOCGIFHWADDR, &request);
  const int err = errno;
  close(fd);
  if (got != 0) {
    return Error::failure("cannot read the link type of '" + name + "': " + std::strerror(err));
  }
  const unsigned type = request.ifr_hwaddr.sa_family;
  if (type == ARPHRD_ETHER || type == ARPHRD_LOOPBACK) return okStatus();
  return Error::usage("'" + name + "' carries no Ethernet header (link type " +
                      std::to_string(type) +
                      ", see 'ip link'): floodgate parses Ethernet frames and would pass every "
                      "packet on it as non-IP; attach it to the Ethernet interface the traffic "
                      "arrives on");
}

Result<int> interfaceIndex(const std::string& name) {
  unsigned index = if_nametoindex(name.c_str());
  if (index == 0) {
    return Error::failure("no network interface named '" + name +
                          "' in this network namespace (see 'ip link')");
  }
  return static_cast<int>(index);
}

}  // namespace floodgate
