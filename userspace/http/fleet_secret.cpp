// SPDX-License-Identifier: MIT
// Reading the fleet's secret file, and HMAC-SHA256 with it.
#include "http/fleet_secret.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "http/redis/scripts.h"

namespace floodgate::http {
namespace {

constexpr const char* kMakeSecret =
    " (make one with 'head -c 32 /dev/urandom | base64 > FILE && chmod 600 FILE' and give "
    "every controller and service of the fleet the same file)";

std::string trimmed(const std::string& text) {
  const char* space = " \t\r\n";
  size_t begin = text.find_first_not_of(space);
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(space) - begin + 1);
}

}  // namespace

Result<std::string> loadFleetSecret(const std::string& path, const std::string& field) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Error::usage(field + " " + path + " does not exist" + kMakeSecret);
    return Error::usage("cannot read " + field + " " + path + ": " + std::strerror(errno) +
                        " (give this user access: chgrp the file to its group and chmod 640)");
  }
  if ((st.st_mode & S_IROTH) != 0) {
    return Error::usage(field + " " + path +
                        " is readable by every user: anyone could sign with it; chmod 600 "
                        "(or 640 for a group of services) " +
                        path);
  }
  std::ifstream in(path);
  if (!in) {
    return Error::usage("cannot read " + field + " " + path +
                        " (give this user access: chgrp the file to its group and chmod 640)");
  }
  std::stringstream text;
  text << in.rdbuf();
  std::string secret = trimmed(text.str());
  if (secret.size() < kMinFleetSecretBytes) {
    return Error::usage(field + " " + path + " holds " + std::to_string(secret.size()) +
                        " characters; a secret needs at least " +
                        std::to_string(kMinFleetSecretBytes) + kMakeSecret);
  }
  return secret;
}

std::string hmacSha256Hex(std::string_view secret, std::string_view message) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest, &size);
  return redis::hexOf(digest, size);
}

bool macMatches(std::string_view given, std::string_view expected) {
  // The length is no secret (every MAC of the scheme has the same); the content is.
  return given.size() == expected.size() &&
         CRYPTO_memcmp(given.data(), expected.data(), expected.size()) == 0;
}

}  // namespace floodgate::http
