// SPDX-License-Identifier: MIT
// The bpffs layout of pinned limiters, and creating and removing it.
#include "kernel/pins.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace floodgate {

std::string pinDirectory(const std::string& interface) {
  return std::string(kPinRoot) + "/" + interface;
}

std::string mapPinPath(const std::string& interface, const std::string& map_name) {
  return pinDirectory(interface) + "/" + map_name;
}

std::string linkPinPath(const std::string& interface) { return pinDirectory(interface) + "/link"; }

std::string rootArrayPinPath(const std::string& interface) {
  return pinDirectory(interface) + "/root_array";
}

std::string programPinPath(const std::string& interface) {
  return pinDirectory(interface) + "/program";
}

std::string tcProgramPinPath(const std::string& interface) {
  return pinDirectory(interface) + "/syn_cookie_tc";
}

bool pinnedAsAttached(const std::string& interface) {
  return access(linkPinPath(interface).c_str(), F_OK) == 0 ||
         access(rootArrayPinPath(interface).c_str(), F_OK) == 0;
}

std::vector<std::string> pinnedInterfaces() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(kPinRoot, ec)) {
    if (pinnedAsAttached(entry.path().filename())) out.push_back(entry.path().filename());
  }
  std::sort(out.begin(), out.end());
  return out;
}

Status createPinDirectory(const std::string& interface) {
  for (const std::string& dir : {std::string(kPinRoot), pinDirectory(interface)}) {
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      return Error::failure("cannot create " + dir + ": " + std::strerror(errno));
    }
  }
  return okStatus();
}

Status removePins(const std::string& interface) {
  std::error_code ec;
  std::filesystem::remove_all(pinDirectory(interface), ec);
  if (ec) return Error::failure("cannot remove " + pinDirectory(interface) + ": " + ec.message());
  return okStatus();
}

}  // namespace floodgate
