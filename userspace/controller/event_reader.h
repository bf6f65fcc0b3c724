// SPDX-License-Identifier: MIT
// EventReader: the changes of state the XDP program reports through its `events` ring
// buffer (a source starts being limited, a ban starts or ends), decoded.
#pragma once

#include <bpf/libbpf.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "floodgate/common/cidr.h"
#include "floodgate/common/result.h"
#include "floodgate_shared.h"
#include "kernel/unique_fd.h"

namespace floodgate {

struct XdpLimiterEvent {
  uint32_t type = 0;           // enum fg_event_type
  uint32_t rule_id = 0;        // FG_BAN_MANUAL when a manual ban ended
  std::optional<Cidr> source;  // none for the per-rule events (untracked, capped)
  uint64_t jiffies = 0;
};

// "limited", "ban_start", "ban_end", "untracked_limited", "new_sources_capped".
const char* eventTypeName(uint32_t type);

// Decodes one record of the ring buffer.
XdpLimiterEvent decodeEvent(const fg_event& raw);

// Reads one interface's events. One reader per interface: the ring buffer has one consumer.
class EventReader {
 public:
  static Result<EventReader> open(const std::string& interface);

  // A descriptor that turns readable when events wait (for poll/epoll).
  int pollFd() const;

  // Takes the events waiting, at most `max` (the rest stay for the next call); never blocks.
  Result<std::vector<XdpLimiterEvent>> drain(size_t max = 65536);

 private:
  struct RingDeleter {
    void operator()(ring_buffer* ring) const { ring_buffer__free(ring); }
  };
  // Where the ring buffer's callback puts events; on the heap so a moved reader keeps it.
  struct Inbox {
    std::vector<XdpLimiterEvent> events;
    size_t max = 0;
  };

  UniqueFd map_;
  std::unique_ptr<Inbox> inbox_;
  std::unique_ptr<ring_buffer, RingDeleter> ring_;
};

}  // namespace floodgate
