// SPDX-License-Identifier: MIT
// The normal form of a request's path: every spelling a server resolves alike, as one.
#include "floodgate/core/request_path.h"

#include <gtest/gtest.h>

#include <string>

namespace floodgate::http {
namespace {

std::string normal(std::string_view path) {
  std::string buffer;
  return std::string(normalPath(path, buffer));
}

TEST(NormalPath, ANormalPathIsItselfWithoutACopy) {
  for (const char* path : {"/", "/downloads", "/downloads/", "/downloads/big.iso", "/a/b/c/",
                           "/a..b/.c/..d/c.", "/Downloads/%2e"}) {
    EXPECT_TRUE(isNormalPath(path)) << path;
    std::string buffer;
    const std::string_view path_view = path;
    EXPECT_EQ(normalPath(path_view, buffer).data(), path_view.data()) << path;
    EXPECT_TRUE(buffer.empty());
  }
}

// Each spelling cpp-httplib serves from a mount at "/" as /downloads/big.iso.
TEST(NormalPath, SlashRunsDotSegmentsAndParentsAreResolved) {
  for (const char* path :
       {"//downloads/big.iso", "///downloads//big.iso", "/./downloads/big.iso",
        "/downloads/./big.iso", "/x/../downloads/big.iso", "/x/y/../../downloads/big.iso",
        "/../downloads/big.iso", "/../../x/../downloads/./big.iso", "/downloads/x/..//big.iso"}) {
    EXPECT_FALSE(isNormalPath(path)) << path;
    EXPECT_EQ(normal(path), "/downloads/big.iso") << path;
  }
}

// A '..' never climbs above '/'; a path ending in '.' or '..' names a directory, as a
// trailing '/' does (RFC 3986 5.2.4), and a trailing '/' is kept.
TEST(NormalPath, ParentsStopAtTheRootAndDirectoriesKeepTheirSlash) {
  EXPECT_EQ(normal("/.."), "/");
  EXPECT_EQ(normal("/../.."), "/");
  EXPECT_EQ(normal("/."), "/");
  EXPECT_EQ(normal("//"), "/");
  EXPECT_EQ(normal("/downloads/."), "/downloads/");
  EXPECT_EQ(normal("/downloads/x/.."), "/downloads/");
  EXPECT_EQ(normal("/downloads//"), "/downloads/");
  EXPECT_EQ(normal("/downloads/.."), "/");
  // a segment that only starts or ends with dots is a name
  EXPECT_EQ(normal("//...//..x/x../"), "/.../..x/x../");
  // case is the server's to tell apart, as it is
  EXPECT_EQ(normal("//Downloads/BIG.iso"), "/Downloads/BIG.iso");
}

// A target without a leading '/' (origin-form requires one; cpp-httplib accepts it) is read
// from the root; an absolute-form target is its path.
TEST(NormalPath, ATargetWithoutALeadingSlashIsReadFromTheRoot) {
  EXPECT_EQ(normal(""), "/");
  EXPECT_EQ(normal("downloads/big.iso"), "/downloads/big.iso");
  EXPECT_EQ(normal("./downloads/big.iso"), "/downloads/big.iso");
  EXPECT_EQ(normal("../downloads/big.iso"), "/downloads/big.iso");
  EXPECT_EQ(normal("*"), "/*");
  EXPECT_EQ(normal("http://example.com/downloads/big.iso"), "/downloads/big.iso");
  EXPECT_EQ(normal("HTTPS://user@example.com:8443//downloads/./big.iso"), "/downloads/big.iso");
  EXPECT_EQ(normal("http://example.com"), "/");
  EXPECT_EQ(normal("http://example.com/"), "/");
  // not a scheme: a relative path whose first segment holds a ':'
  EXPECT_EQ(normal("http:/downloads"), "/http:/downloads");
  EXPECT_EQ(normal("1http://example.com/downloads"), "/1http:/example.com/downloads");
}

}  // namespace
}  // namespace floodgate::http
