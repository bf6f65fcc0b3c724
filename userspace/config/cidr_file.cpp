// SPDX-License-Identifier: MIT
// Reads a CIDR list file in one piece and parses it line by line, without a copy per line.
#include "config/cidr_file.h"

#include <string_view>

#include "floodgate/common/read_file.h"

namespace floodgate::config {
namespace {

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\r'; }

}  // namespace

std::optional<size_t> readCidrFile(const std::string& path, DistinctCidrs& out,
                                   Diagnostics& diagnostics, std::string* read_error, size_t most) {
  Result<std::string> file = readWholeFile(path, kMaxListFileBytes);
  if (!file) {
    if (read_error) *read_error = file.error().message;
    return std::nullopt;
  }
  const std::string& text = *file;
  size_t bad_lines = 0;
  size_t cidrs = 0;
  auto report = [&](int line, size_t column, std::string message) {
    if (++bad_lines <= kMaxFileDiagnostics) {
      diagnostics.add(path, line, static_cast<int>(column) + 1, std::move(message));
    }
  };
  std::string_view rest = text;
  int line = 0;
  while (!rest.empty() && out.count(Family::kV4) <= most && out.count(Family::kV6) <= most) {
    ++line;
    size_t eol = rest.find('\n');
    std::string_view content = rest.substr(0, eol);
    rest.remove_prefix(eol == std::string_view::npos ? rest.size() : eol + 1);

    content = content.substr(0, content.find('#'));
    size_t start = 0;
    while (start < content.size() && isSpace(content[start])) ++start;
    size_t end = content.size();
    while (end > start && isSpace(content[end - 1])) --end;
    if (start == end) continue;
    std::string_view token = content.substr(start, end - start);
    // The line's text is never echoed: the path may be a link to a file that is not a list
    // at all (a key, a password file), and these messages go to logs.
    size_t inner = token.find_first_of(" \t");
    if (inner != std::string_view::npos) {
      report(line, start + inner, "expected one CIDR per line, got more on this line");
      continue;
    }
    Result<Cidr> cidr = parseCidr(token);
    if (!cidr) {
      report(line, start,
             "not a CIDR, or host bits set below its prefix: expected one address or prefix "
             "per line (192.0.2.0/24, 2001:db8::/32) and # comments");
      continue;
    }
    ++cidrs;
    out.add(*cidr);
  }
  if (bad_lines > kMaxFileDiagnostics) {
    diagnostics.add(path, 0, 0,
                    std::to_string(bad_lines - kMaxFileDiagnostics) + " more bad lines not shown");
  }
  return cidrs;
}

}  // namespace floodgate::config
