// SPDX-License-Identifier: MIT
#include "floodgate/core/header_text.h"

#include <gtest/gtest.h>

#include <string>

namespace floodgate::http {
namespace {

TEST(HeaderKey, AnyOtherHeaderIsItsValueWithoutOws) {
  EXPECT_EQ(headerKey("X-API-Key", " \tAbC dEf\t "), "AbC dEf");
  EXPECT_EQ(headerKey("X-API-Key", ""), "");
}

TEST(HeaderKey, AuthorizationHasALowerCaseSchemeAndOneSpace) {
  EXPECT_EQ(headerKey("Authorization", "Bearer AbC"), "bearer AbC");
  EXPECT_EQ(headerKey("authorization", " BEARER \t  AbC "), "bearer AbC");
  EXPECT_EQ(headerKey("Proxy-Authorization", "Basic dXNlcjpwYXNz"), "basic dXNlcjpwYXNz");
  // the credentials keep their case and their inner spaces (auth-params)
  EXPECT_EQ(headerKey("Authorization", "Digest username=\"A\",  realm=\"r\""),
            "digest username=\"A\",  realm=\"r\"");
  EXPECT_EQ(headerKey("Authorization", "Negotiate"), "negotiate");
  EXPECT_EQ(headerKey("Authorization", "Negotiate \t"), "negotiate");
}

TEST(IsCanonicalBase64, StandardIsTheAlphabetPaddedWithNoUnusedBitsSet) {
  for (const char* text : {"", "YQ==", "YWI=", "YWJj", "YWI/", "+/+/", "dXNlcjpwYXNz"}) {
    EXPECT_TRUE(isCanonicalBase64(text, false)) << text;
  }
  for (const char* text : {"YQ", "YQ=", "YQ===", "YR==", "Yf==", "YWJ=", "YWJjZ",
                           "Y===", "====", "=", "YW=j", "YWI_", "-_-_", "YW I=", "YWJj\n"}) {
    EXPECT_FALSE(isCanonicalBase64(text, false)) << text;
  }
}

TEST(IsCanonicalBase64, UrlIsItsAlphabetUnpaddedWithNoUnusedBitsSet) {
  for (const char* text : {"", "YQ", "YWI", "YWJj", "YWI_", "-_-_"}) {
    EXPECT_TRUE(isCanonicalBase64(text, true)) << text;
  }
  for (const char* text : {"YQ==", "YWI=", "YR", "YWJ", "YWJjZ", "Y", "YWI/", "+/+/", "YW!I"}) {
    EXPECT_FALSE(isCanonicalBase64(text, true)) << text;
  }
}

// Basic credentials in canonical base64 are their key, as they are.
TEST(HeaderKey, CanonicalBasicCredentialsAreTheirKey) {
  EXPECT_EQ(headerKey("Authorization", "Basic YWxpY2U6c2VjcmV0"), "basic YWxpY2U6c2VjcmV0");
  EXPECT_EQ(headerKey("Authorization", "basic  YQ=="), "basic YQ==");
  EXPECT_EQ(headerKey("Proxy-Authorization", "BASIC YWI/"), "basic YWI/");
}

// Every other spelling names no key: a decoder that stops at the first '=' or character
// outside the alphabet (Boost.Beast's) reads each of these as "alice:secret", one that
// skips them (Python's) reads some as other bytes, so keying their text would give one
// secret a quota per spelling.
TEST(HeaderKey, BasicCredentialsInAnyOtherSpellingNameNoKey) {
  for (const char* spelling :
       {"YWxpY2U6c2VjcmV0!1", "YWxpY2U6c2VjcmV0!2", "YWxpY2U6c2VjcmV0=AAAA", "YWxpY2U6c2VjcmV0!",
        "YWxpY2U6c2VjcmV0=", "YWxpY2U6c2VjcmV0====", "!YWxpY2U6c2VjcmV0", "YWxp Y2U6c2VjcmV0",
        "YWxp\r\nY2U6c2VjcmV0", "YWxpY2U6c2VjcmV0.", "YWxpY2U6c2VjcmV0A"}) {
    EXPECT_FALSE(headerKey("Authorization", std::string("Basic ") + spelling)) << spelling;
  }
  // "a" without its padding, with too much, or with the last character's unused bits set
  for (const char* spelling : {"YQ", "YQ=", "YQ===", "YR==", "Yf=="}) {
    EXPECT_FALSE(headerKey("Authorization", std::string("Basic ") + spelling)) << spelling;
  }
  // "ab?" with the URL-safe alphabet, which some decoders read as the standard one
  EXPECT_FALSE(headerKey("Authorization", "Basic YWI_"));
  EXPECT_FALSE(headerKey("Proxy-Authorization", "Basic YWI_"));
  // text that holds no whole byte
  EXPECT_FALSE(headerKey("Authorization", "Basic YWJjZ"));
  EXPECT_FALSE(headerKey("Authorization", "Basic ===="));
  // an opaque Bearer token is not decoded: its text is what its issuer looks up
  EXPECT_EQ(headerKey("Authorization", "Bearer YR=="), "bearer YR==");
  EXPECT_EQ(headerKey("Authorization", "Bearer YWxpY2U6c2VjcmV0!1"), "bearer YWxpY2U6c2VjcmV0!1");
}

// A JWT whose segments are canonical base64url is its key, as it is.
TEST(HeaderKey, ACanonicalJwtIsItsKey) {
  const std::string header = "eyJhbGciOiJIUzI1NiJ9";                            // {"alg":"HS256"}
  const std::string payload = "eyJzdWIiOiIxIn0";                                // {"sub":"1"}
  const std::string signature = "LXEWQrcmsEQBYnyp-6wy9chTD7GQPMTbAiWHF5IaSIE";  // 32 bytes
  const std::string token = header + "." + payload + "." + signature;
  EXPECT_EQ(headerKey("Authorization", "Bearer " + token), "bearer " + token);
  // an unsigned JWS's empty signature; a JWE (five segments), its key empty under "dir"
  EXPECT_EQ(headerKey("Authorization", "Bearer " + header + "." + payload + "."),
            "bearer " + header + "." + payload + ".");
  const std::string jwe = header + ".." + payload + "." + signature + "." + header;
  EXPECT_EQ(headerKey("Authorization", "Bearer " + jwe), "bearer " + jwe);
}

// Any other spelling of a JWT names no key: junk or padding in a segment, the standard
// alphabet, a last character's unused bits, each read by some JWT library as the same token.
TEST(HeaderKey, AJwtInAnyOtherSpellingNamesNoKey) {
  const std::string header = "eyJhbGciOiJIUzI1NiJ9";
  const std::string payload = "eyJzdWIiOiIxIn";                                // but its last
  const std::string signature = "LXEWQrcmsEQBYnyp-6wy9chTD7GQPMTbAiWHF5IaSI";  // character
  ASSERT_TRUE(
      headerKey("Authorization", "Bearer " + header + "." + payload + "0." + signature + "E"));
  for (const std::string& spelling : {
           header + "." + payload + "3." + signature + "E",       // unused bits
           header + "." + payload + "0." + signature + "H",       // unused bits
           header + "==." + payload + "0." + signature + "E",     // padding
           header + "." + payload + "0=." + signature + "E",      // padding
           header + "." + payload + "0." + signature + "E=",      // padding
           header + "." + payload + "0." + signature + "E=AAAA",  // after padding
           header + "." + payload + "0." + signature + "E!1",     // junk
           header + "." + payload + "0." + signature.substr(0, 5) + "!" + signature.substr(5) + "E",
           header + "." + payload + "0." + "LXEWQrcmsEQBYnyp+6wy9chTD7GQPMTbAiWHF5IaSIE",  // '+'
           "!" + header + "." + payload + "0." + signature + "E",  // junk first
           // a JWE whose last segment holds a lone character past its whole groups
           header + "." + payload + "0." + signature + "E" + "." + header + "." + header + "A",
       }) {
    EXPECT_FALSE(headerKey("Authorization", "Bearer " + spelling)) << spelling;
  }
}

// A Bearer token that is no JWT (not 3 or 5 segments, or a first segment that is no JSON
// header) is an opaque token: its text is its key, whatever characters it holds.
TEST(HeaderKey, AnOpaqueBearerTokenIsItsText) {
  for (const char* token : {"a.b.c.d", "a.b.c", "v4.public.eyJzdWIiOiIxIn0",
                            "v2.local.x!y=", "eyJhbGciOiJIUzI1NiJ9.x!", "mF_9.B5f-4.1JqM"}) {
    EXPECT_EQ(headerKey("Authorization", std::string("Bearer ") + token),
              std::string("bearer ") + token);
  }
}

}  // namespace
}  // namespace floodgate::http
