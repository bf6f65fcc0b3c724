// SPDX-License-Identifier: MIT
#include "floodgate/core/header_text.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace floodgate::http
