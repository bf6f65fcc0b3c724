// SPDX-License-Identifier: MIT
// Attaching and removing floodgate's TC ingress filter through libbpf's netlink calls.
#include "kernel/tc_ingress.h"

#include <bpf/libbpf.h>

#include <cerrno>
#include <cstring>

namespace floodgate {
namespace {

// floodgate's filter among the interface's ingress filters.
constexpr uint32_t kTcHandle = 0xf10d;
constexpr uint32_t kTcPriority = 0xf10d;

}  // namespace

Status attachTcIngress(int ifindex, int program_fd, const std::string& interface) {
  LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
  int err = bpf_tc_hook_create(&hook);
  if (err && err != -EEXIST) {
    return Error::failure("cannot add a clsact qdisc to '" + interface +
                          "' for the SYN-cookie handover: " + std::strerror(-err));
  }
  LIBBPF_OPTS(bpf_tc_opts, opts, .prog_fd = program_fd, .flags = BPF_TC_F_REPLACE,
              .handle = kTcHandle, .priority = kTcPriority);
  err = bpf_tc_attach(&hook, &opts);
  if (err) {
    return Error::failure("cannot attach the SYN-cookie handover at TC ingress of '" + interface +
                          "': " + std::strerror(-err));
  }
  return okStatus();
}

Status detachTcIngress(int ifindex, const std::string& interface) {
  LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
  LIBBPF_OPTS(bpf_tc_opts, opts, .handle = kTcHandle, .priority = kTcPriority);
  // an interface that never had the filter has no clsact qdisc either: libbpf would print
  // the kernel's "Parent Qdisc doesn't exists" for what the error code says already
  libbpf_print_fn_t print = libbpf_set_print(nullptr);
  int err = bpf_tc_detach(&hook, &opts);
  libbpf_set_print(print);
  if (err && err != -ENOENT && err != -EINVAL) {
    return Error::failure("cannot remove the SYN-cookie handover from TC ingress of '" + interface +
                          "': " + std::strerror(-err));
  }
  return okStatus();
}

}  // namespace floodgate
