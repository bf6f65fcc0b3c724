// SPDX-License-Identifier: MIT
// EventLog: one line per key per interval, counts in between.
#include "daemon/event_log.h"

namespace floodgate::daemon {

std::string EventLog::lineFor(const Key& key, uint64_t count) {
  // key=value pairs: journald keeps the line as it is, and they grep well
  std::string line = "event=" + key.event + " interface=" + key.interface;
  if (!key.subject.empty()) line += " source=" + key.subject;
  line += " rule=" + key.rule + " count=" + std::to_string(count);
  return line;
}

void EventLog::note(const std::string& interface, const XdpLimiterEvent& event,
                    const std::string& rule, Clock::time_point now, std::vector<LogLine>& out) {
  const std::string type = eventTypeName(event.type);
  const std::string subject = event.source ? event.source->toString() : "";
  const std::string id = interface + '|' + type + '|' + (subject.empty() ? rule : subject);
  auto found = keys_.find(id);
  if (found == keys_.end()) {
    if (keys_.size() >= kMaxKeys) {
      ++untracked_events_;
      return;
    }
    Key key{interface, type, subject, rule, event.type != FG_EVENT_BAN_END, now, 0};
    out.push_back({key.warning, lineFor(key, 1)});
    keys_.emplace(id, std::move(key));
    return;
  }
  Key& key = found->second;
  if (now - key.logged_at < interval_) {
    ++key.unlogged;
    return;
  }
  out.push_back({key.warning, lineFor(key, key.unlogged + 1)});
  key.unlogged = 0;
  key.logged_at = now;
}

void EventLog::flush(Clock::time_point now, std::vector<LogLine>& out) {
  for (auto it = keys_.begin(); it != keys_.end();) {
    Key& key = it->second;
    if (now - key.logged_at < interval_) {
      ++it;
      continue;
    }
    if (key.unlogged > 0) {
      out.push_back({key.warning, lineFor(key, key.unlogged)});
      key.unlogged = 0;
      key.logged_at = now;
      ++it;
      continue;
    }
    it = keys_.erase(it);  // quiet for a whole interval
  }
  if (untracked_events_ > 0 && now - summary_at_ >= interval_) {
    out.push_back({true, "event=many interface=* count=" + std::to_string(untracked_events_) +
                             " (events of more than " + std::to_string(kMaxKeys) +
                             " sources at once; see floodgate top)"});
    untracked_events_ = 0;
    summary_at_ = now;
  }
}

}  // namespace floodgate::daemon
