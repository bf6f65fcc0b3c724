// SPDX-License-Identifier: MIT
// Reading the fleet's secret file, with the checks a shared secret needs.
#include "floodgate/core/secret_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace floodgate::http {
namespace {

// A secret is a line; a file far longer than one is not a secret file.
constexpr size_t kMaxFleetSecretFileBytes = 64 * 1024;

constexpr const char* kMakeSecret =
    " (make one with 'head -c 32 /dev/urandom | base64 > FILE && chmod 600 FILE' and give "
    "every controller and service of the fleet the same file)";

std::string trimmed(const std::string& text) {
  const char* space = " \t\r\n";
  size_t begin = text.find_first_not_of(space);
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(space) - begin + 1);
}

// The trimmed text of `path`, a regular file only its owner (and group) may write and not
// every user may read; `hint` ends the error of a file that does not exist.
Result<std::string> readProtectedFile(const std::string& path, const std::string& field,
                                      const std::string& hint) {
  // One descriptor for the checks and the read: what is read is the file that was checked.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return Error::usage(field + " " + path + " does not exist" + hint);
    return Error::usage("cannot read " + field + " " + path + ": " + std::strerror(errno) +
                        " (give this user access: chgrp the file to its group and chmod 640)");
  }
  struct stat st {};
  std::string problem;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    problem = " is not a regular file; write the secret to a file";
  } else if ((st.st_mode & S_IROTH) != 0) {
    problem =
        " is readable by every user: anyone could use it; chmod 600 (or 640 for a group of "
        "services) " +
        path;
  } else if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    problem =
        " is writable by others than its owner: they could change it; chmod 600 (or 640 for "
        "a group of services) " +
        path;
  }
  std::string raw;
  if (problem.empty()) {
    char buffer[4096];
    ssize_t n = 0;
    while (raw.size() < kMaxFleetSecretFileBytes && (n = read(fd, buffer, sizeof buffer)) > 0) {
      raw.append(buffer, static_cast<size_t>(n));
    }
    if (n < 0) problem = std::string(": cannot read it: ") + std::strerror(errno);
  }
  close(fd);
  if (!problem.empty()) return Error::usage(field + " " + path + problem);
  return trimmed(raw);
}

}  // namespace

Result<std::string> loadFleetSecret(const std::string& path, const std::string& field) {
  Result<std::string> secret = readProtectedFile(path, field, kMakeSecret);
  if (!secret) return secret;
  if (secret->size() < kMinFleetSecretBytes) {
    return Error::usage(field + " " + path + " holds " + std::to_string(secret->size()) +
                        " characters; a secret needs at least " +
                        std::to_string(kMinFleetSecretBytes) + kMakeSecret);
  }
  return secret;
}

Result<std::string> loadRedisPassword(const std::string& path, const std::string& field) {
  const std::string hint =
      " (write the password of Redis's requirepass, or of its ACL user, to a file and chmod "
      "600 it)";
  Result<std::string> password = readProtectedFile(path, field, hint);
  if (password && password->empty()) return Error::usage(field + " " + path + " is empty" + hint);
  return password;
}

Result<std::string> loadReportSecret(const std::string& path) {
  return loadFleetSecret(path, "http.escalate.secret_file");
}

}  // namespace floodgate::http
