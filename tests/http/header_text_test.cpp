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

// Each spelling of one Basic credential that a lenient decoder reads as the same bytes is
// one key: "user:pass" and "a".
TEST(HeaderKey, BasicCredentialsAreKeyedByWhatTheyDecodeTo) {
  for (const char* spelling :
       {"dXNlcjpwYXNz", "dXNlcjpw YXNz", "dXNlcjpw\r\nYXNz", "dXNlcjpwYXNz=="}) {
    EXPECT_EQ(headerKey("Authorization", std::string("basic ") + spelling), "basic dXNlcjpwYXNz")
        << spelling;
  }
  // the unused low bits of the last character, padding or none
  for (const char* spelling : {"YQ==", "YQ", "YR==", "YW", "Yf=", "YQ="}) {
    EXPECT_EQ(headerKey("Authorization", std::string("Basic ") + spelling), "basic YQ==")
        << spelling;
  }
  // what a lenient decoder skips: characters outside the alphabet (the URL-safe ones too,
  // for Basic), and whatever follows the padding that ends a group ("user:pas")
  EXPECT_EQ(headerKey("Authorization", "Basic dXNl!cjpwYXNz"), "basic dXNlcjpwYXNz");
  EXPECT_EQ(headerKey("Authorization", "Basic d.XN-lcjp_wYXNz"), "basic dXNlcjpwYXNz");
  EXPECT_EQ(headerKey("Authorization", "Basic dXNlcjpwYXM=QUJD"), "basic dXNlcjpwYXM=");
  EXPECT_EQ(headerKey("Authorization", "Basic dXNlcjpwYXM=QUJE"), "basic dXNlcjpwYXM=");
  // another credential is another key
  EXPECT_NE(headerKey("Authorization", "Basic dXNlcjpwYXNy"), "basic dXNlcjpwYXNz");
}

// Text that holds no whole byte is its own key, as it is: a server refuses it whatever it says.
TEST(HeaderKey, BasicTextWithNoWholeByteIsKeptAsItIs) {
  EXPECT_EQ(headerKey("Authorization", "Basic YWJjZ"), "basic YWJjZ");  // a lone 6 bits
  EXPECT_EQ(headerKey("Authorization", "Basic ===="), "basic ====");
  EXPECT_EQ(headerKey("Authorization", "Basic -_-_"), "basic -_-_");  // not Basic's alphabet
  // an opaque Bearer token is not decoded: its text is what its issuer looks up
  EXPECT_EQ(headerKey("Authorization", "Bearer YR=="), "bearer YR==");
}

// A JWT's segments are keyed by what they decode to: the unused bits of each segment's last
// character, or padding, make no token of their own.
TEST(HeaderKey, AJwtIsKeyedByWhatItsSegmentsDecodeTo) {
  const std::string header = "eyJhbGciOiJIUzI1NiJ9";  // {"alg":"HS256"}
  const std::string payload = "eyJzdWIiOiIxIn";       // {"sub":"1"} but its last character
  const std::string signature = "LXEWQrcmsEQBYnyp-6wy9chTD7GQPMTbAiWHF5IaSI";  // the same
  // the last characters: payload 0 to 3, signature E to H, the same bytes (2 unused bits)
  const std::string key = "bearer " + header + "." + payload + "0." + signature + "E";
  for (const std::string& spelling :
       {header + "." + payload + "0." + signature + "E",
        header + "." + payload + "3." + signature + "H",
        header + "." + payload + "1." + signature + "F",
        header + "==." + payload + "2=." + signature + "G=",
        header + "." + payload + "0." + signature.substr(0, 5) + "!" + signature.substr(5) + "E"}) {
    EXPECT_EQ(headerKey("Authorization", "Bearer " + spelling), key) << spelling;
  }
  // another signature is another key
  EXPECT_NE(headerKey("Authorization", "Bearer " + header + "." + payload + "0." + signature + "I"),
            key);
  // an unsigned JWT's empty signature stays empty; a JWE has five segments
  EXPECT_EQ(headerKey("Authorization", "Bearer " + header + "." + payload + "1."),
            "bearer " + header + "." + payload + "0.");
  EXPECT_EQ(headerKey("Authorization", "Bearer " + header + ".." + payload + "1.." + header),
            "bearer " + header + ".." + payload + "0.." + header);
  EXPECT_EQ(headerKey("Authorization", "Bearer a.b.c.d"), "bearer a.b.c.d");  // four: as it is
  EXPECT_EQ(headerKey("Authorization", "Bearer " + header + ".x!." + signature + "F"),
            "bearer " + header + ".x!." + signature + "F");  // not base64: as it is
}

}  // namespace
}  // namespace floodgate::http
