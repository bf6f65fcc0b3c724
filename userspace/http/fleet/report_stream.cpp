// SPDX-License-Identifier: MIT
// Signing, adding and reading back offender reports in a Redis stream.
#include "floodgate/fleet/report_stream.h"

#include <charconv>

#include "floodgate/common/text.h"
#include "floodgate/fleet/fleet_secret.h"
#include "floodgate/redis/scripts.h"
#include "floodgate/redis/store_factory.h"

namespace floodgate::http {
namespace {

// HMAC-SHA256 over the three signed fields, newline-separated (none of them holds one).
std::string mac(std::string_view secret, std::string_view line, std::string_view reporter,
                int64_t time_ms) {
  std::string message;
  message.append(line).append("\n").append(reporter).append("\n").append(std::to_string(time_ms));
  return hmacSha256Hex(secret, message);
}

}  // namespace

redis::ClientOptions reportClientOptions(const StoreConfig& store) {
  return occasionalCallOptions(redisClientOptions(store), 2000);
}

StreamReport signStreamReport(std::string_view secret, std::string line, std::string reporter,
                              int64_t time_ms) {
  StreamReport report{std::move(line), std::move(reporter), time_ms, ""};
  report.mac = mac(secret, report.line, report.reporter, report.time_ms);
  return report;
}

redis::Command streamAddCommand(const std::string& stream, const StreamReport& report) {
  return {"XADD",
          stream,
          "MAXLEN",
          "~",
          std::to_string(kReportStreamMaxLen),
          "*",
          "report",
          report.line,
          "reporter",
          report.reporter,
          "time_ms",
          std::to_string(report.time_ms),
          "mac",
          report.mac};
}

Result<StreamReport> streamReportFromFields(const redis::Reply& fields) {
  if (fields.type != redis::Reply::Type::kArray || fields.elements.size() % 2 != 0) {
    return Error::usage("a stream entry is a list of field and value pairs");
  }
  if (fields.elements.size() == 2 && fields.elements[0].str == redis::kOversizedField) {
    return Error::usage("an entry larger than any report or record (" +
                        printable(fields.elements[1].str, 20) + " bytes in its fields, at most " +
                        std::to_string(redis::kStreamEntryMostBytes) + ", or more than " +
                        std::to_string(redis::kStreamEntryMostFields) +
                        " fields and values): not read; the entries after it are");
  }
  StreamReport report;
  bool have_line = false, have_time = false;
  for (size_t i = 0; i + 1 < fields.elements.size(); i += 2) {
    const std::string& name = fields.elements[i].str;
    const std::string& value = fields.elements[i + 1].str;
    if (name == "report") {
      report.line = value;
      have_line = true;
    } else if (name == "reporter") {
      report.reporter = value;
    } else if (name == "mac") {
      report.mac = value;
    } else if (name == "time_ms") {
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), report.time_ms);
      have_time = ec == std::errc() && end == value.data() + value.size();
    }
  }
  if (!have_line || !have_time) {
    return Error::usage("a report entry needs the fields report, reporter, time_ms and mac");
  }
  if (report.time_ms < 0 || report.time_ms > kMaxReportTimeMs) {
    return Error::usage("its time_ms " + std::to_string(report.time_ms) +
                        " is no time a host signs (ms since 1970, before the year 3000)");
  }
  return report;
}

bool streamReportSigned(std::string_view secret, const StreamReport& report) {
  return macMatches(report.mac, mac(secret, report.line, report.reporter, report.time_ms));
}

Status checkStreamReport(std::string_view secret, const StreamReport& report, int64_t now_ms,
                         int64_t max_age_ms) {
  if (!streamReportSigned(secret, report)) {
    return Error::usage(
        "its signature does not match: not signed with this fleet's secret (give every host "
        "the same secret_file, and reload controllers and restart services after changing it)");
  }
  if (report.time_ms > now_ms + kReportClockSkewMs) {
    return Error::usage("it was signed " + std::to_string(report.time_ms - now_ms) +
                        " ms ahead of Redis's clock (synchronise the hosts' clocks, e.g. NTP)");
  }
  if (report.time_ms < now_ms - max_age_ms - kReportClockSkewMs) {
    return Error::usage("it was signed " + std::to_string(now_ms - report.time_ms) +
                        " ms ago, longer than the ban it asks for (a replayed report, or clocks "
                        "out of step: synchronise them, e.g. NTP)");
  }
  return okStatus();
}

}  // namespace floodgate::http
