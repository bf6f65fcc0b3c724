// SPDX-License-Identifier: MIT
// Signing, adding and reading back offender reports in a Redis stream.
#include "http/report_stream.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include "http/redis/scripts.h"
#include "http/store_factory.h"

namespace floodgate::http {
namespace {

constexpr const char* kMakeSecret =
    " (make one with 'head -c 32 /dev/urandom | base64 > FILE && chmod 600 FILE' and give "
    "every controller and service of the fleet the same file)";

// HMAC-SHA256 over the three signed fields, newline-separated (none of them holds one).
std::string mac(std::string_view secret, std::string_view line, std::string_view reporter,
                int64_t time_ms) {
  std::string message;
  message.append(line).append("\n").append(reporter).append("\n").append(std::to_string(time_ms));
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest, &size);
  return redis::hexOf(digest, size);
}

std::string trimmed(const std::string& text) {
  const char* space = " \t\r\n";
  size_t begin = text.find_first_not_of(space);
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(space) - begin + 1);
}

}  // namespace

redis::ClientOptions reportClientOptions(const StoreConfig& store) {
  return occasionalCallOptions(redisClientOptions(store), 2000);
}

Result<std::string> loadReportSecret(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) {
      return Error::usage("http.escalate.secret_file " + path + " does not exist" + kMakeSecret);
    }
    return Error::usage("cannot read http.escalate.secret_file " + path + ": " +
                        std::strerror(errno) +
                        " (give this user access: chgrp the file to its group and chmod 640)");
  }
  if ((st.st_mode & S_IROTH) != 0) {
    return Error::usage("http.escalate.secret_file " + path +
                        " is readable by every user: anyone could sign reports; chmod 600 "
                        "(or 640 for a group of services) " +
                        path);
  }
  std::ifstream in(path);
  if (!in) {
    return Error::usage("cannot read http.escalate.secret_file " + path +
                        " (give this user access: chgrp the file to its group and chmod 640)");
  }
  std::stringstream text;
  text << in.rdbuf();
  std::string secret = trimmed(text.str());
  if (secret.size() < kMinReportSecretBytes) {
    return Error::usage("http.escalate.secret_file " + path + " holds " +
                        std::to_string(secret.size()) + " characters; a secret needs at least " +
                        std::to_string(kMinReportSecretBytes) + kMakeSecret);
  }
  return secret;
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
  return report;
}

Status checkStreamReport(std::string_view secret, const StreamReport& report, int64_t now_ms,
                         int64_t max_age_ms) {
  const std::string expected = mac(secret, report.line, report.reporter, report.time_ms);
  if (report.mac.size() != expected.size() ||
      CRYPTO_memcmp(report.mac.data(), expected.data(), expected.size()) != 0) {
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
