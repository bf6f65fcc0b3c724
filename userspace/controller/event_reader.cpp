// SPDX-License-Identifier: MIT
// Reading the program's state-change events from its pinned ring buffer.
#include "controller/event_reader.h"

#include <bpf/bpf.h>

#include <cerrno>
#include <cstring>

#include "controller/kernel_cidr.h"
#include "kernel/pins.h"

namespace floodgate {

const char* eventTypeName(uint32_t type) {
  static const char* const kNames[] = {"limited", "ban_start", "ban_end", "untracked_limited",
                                       "new_sources_capped"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == FG_EVENT_TYPES);
  return type < FG_EVENT_TYPES ? kNames[type] : "unknown";
}

XdpLimiterEvent decodeEvent(const fg_event& raw) {
  XdpLimiterEvent out;
  out.type = raw.type;
  out.rule_id = raw.rule_id;
  out.jiffies = raw.jiffies;
  const bool per_rule =
      raw.type == FG_EVENT_UNTRACKED_LIMITED || raw.type == FG_EVENT_NEW_SOURCES_CAPPED;
  if (!per_rule) {
    out.source = kernelCidr(raw.family, raw.addr, raw.prefix);
  }
  return out;
}

Result<EventReader> EventReader::open(const std::string& interface) {
  const std::string path = mapPinPath(interface, "events");
  EventReader reader;
  reader.map_ = UniqueFd(bpf_obj_get(path.c_str()));
  if (!reader.map_.valid()) {
    return Error::failure("cannot open the event ring buffer " + path + ": " +
                          std::strerror(errno) + " (is floodgate attached to '" + interface +
                          "' by this version?)");
  }
  reader.inbox_ = std::make_unique<Inbox>();
  auto onEvent = [](void* context, void* data, size_t size) -> int {
    auto* inbox = static_cast<Inbox*>(context);
    if (size < sizeof(fg_event)) return 0;  // not ours: skip it
    fg_event raw;
    std::memcpy(&raw, data, sizeof(raw));
    inbox->events.push_back(decodeEvent(raw));
    // a negative return stops this round of consuming; the rest waits in the ring
    return inbox->events.size() >= inbox->max ? -1 : 0;
  };
  ring_buffer* ring = ring_buffer__new(reader.map_.get(), onEvent, reader.inbox_.get(), nullptr);
  if (!ring) {
    return Error::failure("cannot read the event ring buffer " + path + ": " +
                          std::strerror(errno));
  }
  reader.ring_.reset(ring);
  return reader;
}

int EventReader::pollFd() const { return ring_buffer__epoll_fd(ring_.get()); }

Result<std::vector<XdpLimiterEvent>> EventReader::drain(size_t max) {
  inbox_->events.clear();
  inbox_->max = max == 0 ? 1 : max;
  int err = ring_buffer__consume(ring_.get());
  if (err < 0 && inbox_->events.size() < inbox_->max && err != -EINTR) {
    return Error::failure(std::string("cannot read events: ") + std::strerror(-err));
  }
  return std::move(inbox_->events);
}

}  // namespace floodgate
