// SPDX-License-Identifier: MIT
// Publishing policies: http.publish parsing, the versioned document, the atomic file write,
// and refusing what is not a valid published document.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "http/atomic_file.h"
#include "http/config_parser.h"
#include "http/policy_document.h"
#include "http/policy_publisher.h"

namespace floodgate::http {
namespace {

std::string readText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A temporary directory, removed with everything in it.
struct TempDir {
  std::string path;
  TempDir() {
    char name[] = "/tmp/fg-publish-XXXXXX";
    path = mkdtemp(name);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

std::string configWith(const std::string& publish, int limit = 5) {
  return "interfaces: [{name: eth0}]\nhttp:\n  publish: " + publish +
         "\n  policies:\n    - {name: per-ip, key: ip, algorithm: fixed_window, limit: " +
         std::to_string(limit) + ", window_ms: 1000}\n";
}

TEST(HttpPublishConfig, ReadsFileAndRedisTargets) {
  auto config = parseHttpConfigText(
      "http:\n  store: {type: redis, address: 127.0.0.1:6379}\n"
      "  publish: {file: /run/floodgate/p.yaml, redis_key: fg:policies}\n",
      "t.yaml");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->publish.file, "/run/floodgate/p.yaml");
  EXPECT_EQ(config->publish.redis_key, "fg:policies");
  EXPECT_EQ(config->publish.redis_channel, "fg:policies") << "the channel defaults to the key";
}

TEST(HttpPublishConfig, MistakesPointAtTheValueAndSayWhatToDo) {
  auto relative = parseHttpConfigText("http:\n  publish: {file: policies.yaml}\n", "t.yaml");
  ASSERT_FALSE(relative.ok());
  EXPECT_EQ(relative.error().message,
            "t.yaml:2:19: http.publish.file must be an absolute file path, e.g. "
            "/run/floodgate/http-policies.yaml, got 'policies.yaml'");
  auto memory = parseHttpConfigText("http:\n  publish: {redis_key: k}\n", "t.yaml");
  ASSERT_FALSE(memory.ok());
  EXPECT_NE(memory.error().message.find("t.yaml:2:24: http.publish.redis_key needs http.store of "
                                        "type redis"),
            std::string::npos)
      << memory.error().message;
  auto empty = parseHttpConfigText("http:\n  publish: {}\n", "t.yaml");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message.find("needs file: PATH or redis_key: KEY"), std::string::npos);
}

TEST(PolicyDocument, VersionFollowsContentAndTheDocumentParsesBack) {
  YAML::Node a = YAML::Load(configWith("{file: /tmp/x.yaml}"))["http"];
  YAML::Node b = YAML::Load(configWith("{file: /tmp/other.yaml}"))["http"];
  YAML::Node c = YAML::Load(configWith("{file: /tmp/x.yaml}", 6))["http"];
  PolicyDocument da = renderPolicyDocument(a);
  EXPECT_EQ(da.version.size(), 16u);
  EXPECT_EQ(renderPolicyDocument(b).version, da.version) << "publish: is not part of it";
  EXPECT_NE(renderPolicyDocument(c).version, da.version);
  EXPECT_FALSE(YAML::Load(da.text)["http"]["publish"]) << "publish: is for the controller";

  auto parsed = parsePolicyDocument(da.text, "/run/p.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message << "\n" << da.text;
  EXPECT_EQ(parsed->version, da.version);
  ASSERT_EQ(parsed->config.policies.size(), 1u);
  EXPECT_EQ(parsed->config.policies[0].algorithm.limit, 5);
  EXPECT_FALSE(parsed->config.publish.enabled());
}

TEST(PolicyDocument, RefusesADocumentWithoutVersionOrWithABadPolicy) {
  auto unversioned = parsePolicyDocument("http: {policies: []}\n", "/run/p.yaml");
  ASSERT_FALSE(unversioned.ok());
  EXPECT_EQ(unversioned.error().message,
            "/run/p.yaml: no version: this is not a policy document published by floodgate "
            "(write it with 'floodgate http publish --config FILE')");
  auto bad = parsePolicyDocument(
      "version: abc\nhttp:\n  policies:\n    - {name: x, key: ip, algorithm: leaky}\n",
      "/run/p.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message.rfind("/run/p.yaml:4:37: unknown algorithm 'leaky'", 0), 0u)
      << bad.error().message;
  auto torn = parsePolicyDocument("version: abc\nhttp: {policies: [\n", "/run/p.yaml");
  ASSERT_FALSE(torn.ok());
  EXPECT_EQ(torn.error().message.rfind("/run/p.yaml:", 0), 0u) << torn.error().message;
}

TEST(AtomicFile, ReplacesTheFileWholeWithNoTemporaryLeftBehind) {
  TempDir dir;
  std::string path = dir.path + "/sub/policies.yaml";  // the directory is made
  ASSERT_TRUE(writeFileAtomically(path, "first\n").ok());
  ASSERT_TRUE(writeFileAtomically(path, "second\n").ok());
  EXPECT_EQ(readText(path), "second\n");
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path + "/sub")) {
    (void)entry;
    ++files;
  }
  EXPECT_EQ(files, 1u) << "a temporary file was left behind";
}

TEST(AtomicFile, ANewFileIsANewInodeSoAReaderHoldsAWholeOldOne) {
  TempDir dir;
  std::string path = dir.path + "/p.yaml";
  ASSERT_TRUE(writeFileAtomically(path, "old content\n").ok());
  std::ifstream reader(path);  // opened before the replacement
  ASSERT_TRUE(writeFileAtomically(path, "new\n").ok());
  std::stringstream seen;
  seen << reader.rdbuf();
  EXPECT_EQ(seen.str(), "old content\n");
  EXPECT_EQ(readText(path), "new\n");
}

TEST(AtomicFile, AnUnwritablePlaceIsOneClearError) {
  Status s = writeFileAtomically("/proc/floodgate-no/p.yaml", "x");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message.find('\n'), std::string::npos);
  EXPECT_NE(s.error().message.find("cannot create a temporary file in /proc/floodgate-no"),
            std::string::npos)
      << s.error().message;
}

TEST(PublishHttpPolicies, WritesTheDocumentWhereTheConfigSays) {
  TempDir dir;
  std::string out = dir.path + "/run/http-policies.yaml";
  std::string config = dir.path + "/floodgate.yaml";
  std::ofstream(config) << configWith("{file: " + out + "}");
  auto report = publishHttpPolicies(config);
  ASSERT_TRUE(report.ok()) << report.error().message;
  ASSERT_EQ(report->targets.size(), 1u);
  EXPECT_EQ(report->targets[0], out);
  auto parsed = parsePolicyDocument(readText(out), out);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->version, report->version);

  std::ofstream(config) << "http: {policies: []}\n";
  auto unset = publishHttpPolicies(config);
  ASSERT_FALSE(unset.ok());
  EXPECT_NE(unset.error().message.find("http.publish is not set"), std::string::npos);
}

}  // namespace
}  // namespace floodgate::http
