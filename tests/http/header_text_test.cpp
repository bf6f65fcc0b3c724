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
  // the URL-safe alphabet: bytes fb ff bf
  EXPECT_EQ(headerKey("Authorization", "Basic -_-_"), "basic +/+/");
  EXPECT_EQ(headerKey("Authorization", "Basic +/+/"), "basic +/+/");
  // another credential is another key
  EXPECT_NE(headerKey("Authorization", "Basic dXNlcjpwYXNy"), "basic dXNlcjpwYXNz");
}

// Text that is not base64 is its own key, as it is: a server refuses it whatever it says.
TEST(HeaderKey, BasicTextThatIsNotBase64IsKeptAsItIs) {
  EXPECT_EQ(headerKey("Authorization", "Basic user:pass"), "basic user:pass");
  EXPECT_EQ(headerKey("Authorization", "Basic YWJjZ"), "basic YWJjZ");  // a lone 6 bits
  EXPECT_EQ(headerKey("Authorization", "Basic ===="), "basic ====");
  // the other schemes are not decoded: a token's bytes are what its issuer checks
  EXPECT_EQ(headerKey("Authorization", "Bearer YR=="), "bearer YR==");
}

}  // namespace
}  // namespace floodgate::http
