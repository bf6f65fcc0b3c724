// SPDX-License-Identifier: MIT
// The TC handover program and the tcp_syncookies sysctl, set up on attach, taken down on detach.
#include "controller/syn_cookie_host.h"

#include <bpf/bpf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>

#include "kernel/pins.h"
#include "kernel/system.h"
#include "kernel/tc_ingress.h"
#include "kernel/unique_fd.h"
#include "syncookie_tc.skel.h"

namespace floodgate {
namespace {

constexpr const char* kSysctlPath = "/proc/sys/net/ipv4/tcp_syncookies";
constexpr const char* kRunDirectory = "/run/floodgate";

// Where the tcp_syncookies value found before attach is kept.
std::string savedPath(const std::string& interface) {
  return std::string(kRunDirectory) + "/" + interface + ".tcp_syncookies";
}

Result<int> readSyncookies() {
  std::ifstream in(kSysctlPath);
  int value = -1;
  if (!(in >> value)) {
    return Error::failure(std::string("cannot read ") + kSysctlPath +
                          ": SYN cookies need a kernel built with CONFIG_SYN_COOKIES");
  }
  return value;
}

Status writeSyncookies(int value) {
  std::ofstream out(kSysctlPath);
  if (!(out << value << '\n') || !out.flush()) {
    return Error::failure(std::string("cannot write ") + kSysctlPath +
                          " (floodgate needs root to turn SYN cookies on)");
  }
  return okStatus();
}

// Makes net.ipv4.tcp_syncookies (of this process's network namespace) at least 1, noting
// the value it found under /run/floodgate when it was 0, so detach can put it back.
Status ensureSyncookies(const std::string& interface) {
  auto value = readSyncookies();
  if (!value) return value.error();
  if (*value != 0) return okStatus();
  // 0 is noted before it changes, so a crash in between leaves the value to put back
  mkdir(kRunDirectory, 0755);
  {
    std::ofstream saved(savedPath(interface));
    if (!(saved << *value << '\n') || !saved.flush()) {
      return Error::failure("cannot write " + savedPath(interface) +
                            " (where floodgate keeps the tcp_syncookies value to restore)");
    }
  }
  return writeSyncookies(1);
}

// Loads the handover program and pins it at tcProgramPinPath, unless a load since the
// limiter's own left it there. Loaded only when a rule gives cookies: its kfunc is Linux 6.9's.
Status pinHandover(const std::string& interface) {
  const std::string path = tcProgramPinPath(interface);
  if (access(path.c_str(), F_OK) == 0) return okStatus();
  syncookie_tc_bpf* skeleton = syncookie_tc_bpf__open_and_load();
  if (!skeleton) {
    return Error::failure(std::string("cannot load the SYN-cookie handover program: ") +
                          std::strerror(errno) +
                          " (SYN cookies need the kernel's bpf_sk_assign_tcp_reqsk, Linux 6.9 or "
                          "later; on an older kernel set syn_cookies: off)");
  }
  const int pinned = bpf_obj_pin(bpf_program__fd(skeleton->progs.floodgate_tc), path.c_str());
  const int pin_errno = errno;
  syncookie_tc_bpf__destroy(skeleton);  // the pin keeps the program
  if (pinned != 0) {
    return Error::failure("cannot pin the SYN-cookie handover program at " + path + ": " +
                          std::strerror(pin_errno));
  }
  return okStatus();
}

// Another interface of this network namespace whose limiter gives SYN cookies (its handover
// program is pinned), if there is one.
std::optional<std::string> otherCookieInterface(const std::string& interface) {
  for (const std::string& other : pinnedInterfaces()) {
    if (other == interface || !interfaceIndex(other)) continue;
    if (access(tcProgramPinPath(other).c_str(), F_OK) == 0) return other;
  }
  return std::nullopt;
}

}  // namespace

bool usesSynCookies(const std::vector<fg_rule>& rules) {
  for (const fg_rule& rule : rules) {
    if (rule.syn_cookies != FG_SYN_COOKIES_OFF) return true;
  }
  return false;
}

Status forgetSynCookieHandover(const std::string& interface) {
  const std::string path = tcProgramPinPath(interface);
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return Error::failure("cannot remove the SYN-cookie handover program's pin " + path + ": " +
                          std::strerror(errno));
  }
  return okStatus();
}

Status syncSynCookieHost(const std::string& interface, bool wanted) {
  if (!wanted) return takeDownSynCookieHost(interface);
  if (Status s = ensureSyncookies(interface); !s) return s;
  auto ifindex = interfaceIndex(interface);
  if (!ifindex) return ifindex.error();
  if (Status s = pinHandover(interface); !s) return s;
  UniqueFd program(bpf_obj_get(tcProgramPinPath(interface).c_str()));
  if (!program.valid()) {
    return Error::failure("cannot open the SYN-cookie handover program at " +
                          tcProgramPinPath(interface) + ": " + std::strerror(errno) +
                          " ('floodgate attach " + interface + " --replace' loads it again)");
  }
  return attachTcIngress(*ifindex, program.get(), interface);
}

Status takeDownSynCookieHost(const std::string& interface) {
  Status status = okStatus();
  if (auto ifindex = interfaceIndex(interface); ifindex) {
    status = detachTcIngress(*ifindex, interface);
  }
  // its pin goes too: a pinned handover program is what says an interface gives cookies
  // (otherCookieInterface), and the next rule that wants them loads it again
  if (Status s = forgetSynCookieHandover(interface); !s && status) status = s;
  std::ifstream saved(savedPath(interface));
  int value = -1;
  if (saved >> value) {
    // The sysctl is the network namespace's, not the interface's: while another interface of
    // it still gives cookies, that one keeps the value to put back, and the kernel keeps
    // checking cookies for it (put back now, it would reset every cookie ACK there).
    if (auto heir = otherCookieInterface(interface)) {
      if (access(savedPath(*heir).c_str(), F_OK) == 0) {  // it holds the same value already
        unlink(savedPath(interface).c_str());
        return status;
      }
      if (std::rename(savedPath(interface).c_str(), savedPath(*heir).c_str()) != 0 && status) {
        status = Error::failure("cannot hand " + savedPath(interface) + " to " + *heir + ": " +
                                std::strerror(errno));
      }
      return status;
    }
    if (Status s = writeSyncookies(value); !s && status) status = s;
    unlink(savedPath(interface).c_str());
  }
  return status;
}

}  // namespace floodgate
