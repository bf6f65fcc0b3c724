// SPDX-License-Identifier: MIT
// Following the current set's http.escalate: compare on a change of set, remake if needed.
#include "floodgate/fleet/live_reporter.h"

#include <iostream>

namespace floodgate::http {
namespace {

// Whether a reporter made for `config` reports as one made for `y` and `store` would.
bool sameEscalation(const HttpConfig& config, const EscalateConfig& y, const StoreConfig& store) {
  const EscalateConfig& x = config.escalate;
  const bool same = x.enabled == y.enabled && x.rejections == y.rejections &&
                    x.within_ms == y.within_ms && x.ban_ns == y.ban_ns && x.socket == y.socket &&
                    x.redis_stream == y.redis_stream && x.secret == y.secret;
  // a stream lives on the store's servers
  return same && (x.redis_stream.empty() || config.store == store);
}

}  // namespace

LiveReporter::LiveReporter(std::shared_ptr<LiveLimiter> live, std::shared_ptr<const Clock> clock,
                           std::function<void(const std::string&)> log)
    : live_(std::move(live)), clock_(std::move(clock)), log_(std::move(log)) {
  if (!log_) log_ = [](const std::string& line) { std::cerr << line << std::endl; };
  std::lock_guard lock(mutex_);
  follow(live_->current());  // nothing to replace yet
}

std::shared_ptr<OffenderReporter> LiveReporter::follow(const std::shared_ptr<Limiter>& limiter) {
  // a weak pointer, not an address: a new set may be allocated where a freed one was
  if (seen_.lock() == limiter) return nullptr;
  seen_ = limiter;
  const HttpConfig& config = limiter->config();
  if (reporter_ != nullptr && sameEscalation(config, escalate_, store_)) return nullptr;
  if (reporter_ == nullptr && !config.escalate.enabled) return nullptr;
  std::shared_ptr<OffenderReporter> next;
  if (config.escalate.enabled) {
    auto made = OffenderReporter::create(config, clock_);
    if (!made) {
      log_("floodgate: the new policies' http.escalate cannot be used (keeping the last one): " +
           made.error().message);
      return nullptr;
    }
    next = std::move(*made);
  }
  escalate_ = config.escalate;
  store_ = config.store;
  std::swap(reporter_, next);
  return next;
}

void LiveReporter::retire(std::shared_ptr<OffenderReporter> reporter) {
  if (reporter == nullptr) return;
  reporter->close();
  std::lock_guard lock(mutex_);
  retired_sent_ += reporter->reportsSent();
  retired_errors_ += reporter->reportErrors();
  retired_dropped_ += reporter->dropped();
}

void LiveReporter::noteRejection(std::string_view client_key) {
  std::shared_ptr<OffenderReporter> reporter, replaced;
  {
    std::lock_guard lock(mutex_);
    replaced = follow(live_->current());
    reporter = reporter_;
  }
  retire(std::move(replaced));
  // counted outside the lock: the reporter is thread-safe
  if (reporter != nullptr) reporter->noteRejection(client_key);
}

bool LiveReporter::active() const {
  std::lock_guard lock(mutex_);
  return reporter_ != nullptr;
}

uint64_t LiveReporter::reportsSent() const {
  std::lock_guard lock(mutex_);
  return retired_sent_ + (reporter_ ? reporter_->reportsSent() : 0);
}

uint64_t LiveReporter::reportErrors() const {
  std::lock_guard lock(mutex_);
  return retired_errors_ + (reporter_ ? reporter_->reportErrors() : 0);
}

uint64_t LiveReporter::dropped() const {
  std::lock_guard lock(mutex_);
  return retired_dropped_ + (reporter_ ? reporter_->dropped() : 0);
}

}  // namespace floodgate::http
