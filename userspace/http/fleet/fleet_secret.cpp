// SPDX-License-Identifier: MIT
// HMAC-SHA256 with the fleet's secret, and comparing MACs in constant time.
#include "floodgate/fleet/fleet_secret.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "floodgate/redis/scripts.h"

namespace floodgate::http {

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
