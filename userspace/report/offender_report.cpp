// SPDX-License-Identifier: MIT
// Writing and reading the offender report's line.
#include "floodgate/report/offender_report.h"

#include <vector>

#include "line_words.h"

namespace floodgate::report {

std::string formatReport(std::string_view client_key, int64_t rejections, int64_t within_ms) {
  return "offender " + std::string(client_key) + " rejections=" + std::to_string(rejections) +
         " within_ms=" + std::to_string(within_ms);
}

Result<OffenderReport> parseReport(std::string_view text) {
  const std::vector<std::string_view> words = lineWords(text);
  const char* shape = "a report is 'offender ADDRESS rejections=N within_ms=N'";
  if (!words.empty() && (words[0] == "ban" || words[0] == "unban")) {
    // a fleet ban or lift record (ban_record.h) in a stream meant for reports
    return Error::usage(std::string("a fleet ban record, not an offender report: give fleet bans a "
                                    "stream of their own; ") +
                        shape);
  }
  if (words.size() != 4 || words[0] != "offender") return Error::usage(std::string(shape));
  auto address = parseCidr(words[1]);
  if (!address)
    return Error::usage("'" + std::string(words[1]) + "' is not an IP address or prefix; " + shape);
  auto rejections = fieldValue(words[2], "rejections");
  auto within = fieldValue(words[3], "within_ms");
  if (!rejections || !within) return Error::usage(std::string(shape));
  // a service on a dual-stack socket sees an IPv4 client as ::ffff:a.b.c.d: its packets carry
  // the IPv4 address, which is what a ban must hold and what the guards must judge
  return OffenderReport{mappedIpv4(*address).value_or(*address), *rejections, *within};
}

}  // namespace floodgate::report
