// SPDX-License-Identifier: MIT
// cidr("198.51.100.7/32"): a prefix a test writes out, parsed; one that does not parse fails
// the test rather than being skipped over.
#pragma once

#include <gtest/gtest.h>

#include "floodgate/common/cidr.h"

namespace floodgate::test {

inline Cidr cidr(const char* text) {
  auto parsed = parseCidr(text);
  EXPECT_TRUE(parsed.ok()) << text;
  return parsed.ok() ? *parsed : Cidr{};
}

}  // namespace floodgate::test
