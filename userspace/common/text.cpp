// SPDX-License-Identifier: MIT
// printable, counted, joined and the interface name check (see text.h).
#include "floodgate/common/text.h"

#include <algorithm>

namespace floodgate {
namespace {

bool isControl(char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }

}  // namespace

std::string counted(size_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return out;
}

std::string printable(std::string_view text, size_t max) {
  std::string out(text.substr(0, max));
  for (char& c : out) {
    if (isControl(c) || c == '"' || c == '\\' || static_cast<unsigned char>(c) >= 0x80) c = '?';
  }
  return out;
}

bool validInterfaceName(std::string_view name) {
  // IFNAMSIZ is 16 with the terminating NUL; "." and ".." would walk out of the pin folder
  if (name.empty() || name.size() > 15 || name == "." || name == "..") return false;
  return std::none_of(name.begin(), name.end(),
                      [](char c) { return c == '/' || c == ':' || c == ' ' || isControl(c); });
}

Status checkInterfaceName(std::string_view name) {
  if (validInterfaceName(name)) return okStatus();
  return Error::usage("'" + printable(name, 40) +
                      "' is not an interface name: 1 to 15 characters, not . or .., and no "
                      "'/', ':', spaces or control characters (see 'ip link')");
}

}  // namespace floodgate
