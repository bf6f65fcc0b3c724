// SPDX-License-Identifier: MIT
// Publishing policies: http.publish parsing (and its secret), the versioned document, its
// signature and what a forged, cut or misplaced one comes out as, the atomic file write,
// and refusing what is not a valid published document.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "floodgate/core/config_parser.h"
#include "floodgate/fleet/atomic_file.h"
#include "floodgate/fleet/policy_document.h"
#include "floodgate/fleet/policy_publisher.h"

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

constexpr const char* kSecret = "0123456789abcdef0123456789abcdef";
const PolicySigning kSigning{"fg:policies", kSecret};

// A fleet secret file (mode 0600) in `dir`.
std::string writeSecret(const TempDir& dir, const std::string& secret = kSecret) {
  std::string path = dir.path + "/fleet.key";
  std::ofstream(path) << secret << "\n";
  EXPECT_EQ(chmod(path.c_str(), 0600), 0);
  return path;
}

TEST(HttpPublishConfig, ReadsFileAndRedisTargets) {
  TempDir dir;
  auto config = parseHttpConfigText(
      "http:\n  store: {type: redis, address: 127.0.0.1:6379}\n"
      "  publish: {file: /run/floodgate/p.yaml, redis_key: fg:policies, secret_file: " +
          writeSecret(dir) + "}\n",
      "t.yaml");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->publish.file, "/run/floodgate/p.yaml");
  EXPECT_EQ(config->publish.redis_key, "fg:policies");
  EXPECT_EQ(config->publish.redis_channel, "fg:policies") << "the channel defaults to the key";
  EXPECT_EQ(config->publish.secret, kSecret);
}

TEST(HttpPublishConfig, RedisPublishingNeedsASecretToSignWith) {
  auto unsigned_config = parseHttpConfigText(
      "http:\n  store: {type: redis, address: 127.0.0.1:6379}\n"
      "  publish: {redis_key: fg:policies}\n",
      "t.yaml");
  ASSERT_FALSE(unsigned_config.ok());
  EXPECT_EQ(unsigned_config.error().message,
            "t.yaml:3:24: http.publish.redis_key needs a secret to sign the policies with: set "
            "http.publish.secret_file (or http.escalate.secret_file) to the fleet's secret file");

  // The offender reports' secret signs the policies too.
  TempDir dir;
  std::string secret = writeSecret(dir, "fedcba9876543210fedcba9876543210");
  auto shared = parseHttpConfigText(
      "http:\n  store: {type: redis, address: 127.0.0.1:6379}\n"
      "  escalate: {rejections: 5, within: 10s, ban: 1m, redis_stream: fg:reports, "
      "secret_file: " +
          secret + "}\n  publish: {redis_key: fg:policies}\n",
      "t.yaml");
  ASSERT_TRUE(shared.ok()) << shared.error().message;
  EXPECT_EQ(shared->publish.secret, "fedcba9876543210fedcba9876543210");

  auto file_only = parseHttpConfigText(
      "http:\n  publish: {file: /run/p.yaml, secret_file: " + secret + "}\n", "t.yaml");
  ASSERT_FALSE(file_only.ok());
  EXPECT_NE(file_only.error().message.find("signs the policies published to Redis: add "
                                           "redis_key"),
            std::string::npos)
      << file_only.error().message;
  ASSERT_EQ(chmod(secret.c_str(), 0644), 0);
  auto open = parseHttpConfigText(
      "http:\n  store: {type: redis, address: 127.0.0.1:6379}\n"
      "  publish: {redis_key: fg:policies, secret_file: " +
          secret + "}\n",
      "t.yaml");
  ASSERT_FALSE(open.ok());
  EXPECT_NE(open.error().message.find("http.publish.secret_file " + secret +
                                      " is readable by every user"),
            std::string::npos)
      << open.error().message;
  // a relative path means another file to each command that reads the config
  auto relative = parseHttpConfigText(
      "http:\n  store: {type: redis, address: 127.0.0.1:6379}\n"
      "  publish: {redis_key: fg:policies, secret_file: fleet.key}\n",
      "t.yaml");
  ASSERT_FALSE(relative.ok());
  EXPECT_EQ(relative.error().message,
            "t.yaml:3:50: http.publish.secret_file must be an absolute path, got 'fleet.key'");
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

PolicyDocument signedDocument(uint64_t serial, int limit = 5,
                              const PolicySigning& signing = kSigning) {
  return renderSignedPolicyDocument(YAML::Load(configWith("{file: /tmp/x.yaml}", limit))["http"],
                                    serial, signing);
}

// What parseSignedPolicyDocument makes of `text` with kSigning: the reason it refused it.
std::optional<PolicyRefusal> refusalOf(const std::string& text,
                                       const PolicySigning& signing = kSigning) {
  PolicyRefusal reason = PolicyRefusal::kInvalid;
  auto parsed = parseSignedPolicyDocument(text, "redis:fg:policies", signing, &reason);
  if (parsed) return std::nullopt;
  EXPECT_EQ(parsed.error().message.find('\n'), std::string::npos) << parsed.error().message;
  return reason;
}

TEST(SignedPolicyDocument, ASignedDocumentReadsBackWithItsSerial) {
  PolicyDocument document = signedDocument(1764596450123456);
  EXPECT_EQ(document.version,
            renderPolicyDocument(YAML::Load(configWith("{file: /y}"))["http"]).version)
      << "the version is still the content's: signing does not change it";
  PolicyRefusal reason = PolicyRefusal::kInvalid;
  auto parsed = parseSignedPolicyDocument(document.text, "redis:fg:policies", kSigning, &reason);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message << "\n" << document.text;
  EXPECT_EQ(parsed->version, document.version);
  EXPECT_EQ(parsed->serial, 1764596450123456u);
  EXPECT_EQ(parsed->config.policies[0].algorithm.limit, 5);
  // A file may hold the signed document: it reads as any other.
  auto plain = parsePolicyDocument(document.text, "/run/p.yaml");
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_EQ(plain->serial, 1764596450123456u);
}

TEST(SignedPolicyDocument, UnsignedForgedCutOrMisplacedDocumentsAreRefused) {
  const std::string text = signedDocument(7).text;
  EXPECT_EQ(refusalOf(renderPolicyDocument(YAML::Load(configWith("{file: /y}"))["http"]).text),
            PolicyRefusal::kUnsigned);
  EXPECT_EQ(refusalOf(""), PolicyRefusal::kUnsigned);

  // Forged: unlimited policies under the signature of limited ones.
  std::string raised = text;
  size_t limit = raised.find("limit: 5");
  ASSERT_NE(limit, std::string::npos) << text;
  raised.replace(limit, 8, "limit: 1000000");
  EXPECT_EQ(refusalOf(raised), PolicyRefusal::kBadSignature);
  // A newer serial written in by hand.
  std::string bumped = text;
  bumped.replace(bumped.find("serial: 7"), 9, "serial: 9");
  EXPECT_EQ(refusalOf(bumped), PolicyRefusal::kBadSignature);
  // Signed with another secret, or checked with none.
  EXPECT_EQ(refusalOf(signedDocument(7, 5, {"fg:policies", "another secret of the fleet"}).text),
            PolicyRefusal::kBadSignature);
  EXPECT_EQ(refusalOf(text, {"fg:policies", ""}), PolicyRefusal::kBadSignature);

  // Cut short anywhere: in the signature, before it, or with a line added after it.
  EXPECT_EQ(refusalOf(text.substr(0, text.size() - 10)), PolicyRefusal::kBadSignature);
  EXPECT_EQ(refusalOf(text.substr(0, text.size() / 2)), PolicyRefusal::kUnsigned);
  EXPECT_EQ(refusalOf(text.substr(0, text.rfind("signature:"))), PolicyRefusal::kUnsigned);
  EXPECT_EQ(refusalOf(text + "http: {policies: []}\n"), PolicyRefusal::kBadSignature);
  EXPECT_FALSE(refusalOf(text.substr(0, text.size() - 1)).has_value())
      << "the last newline is not part of what is signed";

  // Signed for another key: not valid at this one, and the error says why.
  std::string other = signedDocument(7, 5, {"fg:staging-policies", kSecret}).text;
  EXPECT_EQ(refusalOf(other), PolicyRefusal::kBadSignature);
  PolicyRefusal reason = PolicyRefusal::kInvalid;
  auto misplaced = parseSignedPolicyDocument(other, "redis:fg:policies", kSigning, &reason);
  ASSERT_FALSE(misplaced.ok());
  EXPECT_NE(misplaced.error().message.find("signed for redis key 'fg:staging-policies'"),
            std::string::npos)
      << misplaced.error().message;
}

TEST(SignedPolicyDocument, ASignedButInvalidDocumentIsInvalid) {
  PolicyDocument bad = renderSignedPolicyDocument(
      YAML::Load("http:\n  policies:\n    - {name: x, key: ip, algorithm: leaky}\n")["http"], 3,
      kSigning);
  EXPECT_EQ(refusalOf(bad.text), PolicyRefusal::kInvalid);
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
  EXPECT_NE(s.error().message.find("cannot write /proc/floodgate-no/p.yaml: '/proc/floodgate-no'"),
            std::string::npos)
      << s.error().message;
}

// The daemon publishes as root: a link planted as a directory of the path (or at the file)
// would have it write wherever the link points, so such a link is not followed, and nothing
// is written.
TEST(AtomicFile, NoLinkInThePathIsFollowed) {
  TempDir dir;  // where anyone may plant a link, as /tmp
  std::filesystem::permissions(dir.path,
                               std::filesystem::perms::all | std::filesystem::perms::sticky_bit);
  std::filesystem::create_directory(dir.path + "/real");
  std::filesystem::create_directory_symlink(dir.path + "/real", dir.path + "/planted");
  Status s = writeFileAtomically(dir.path + "/planted/sub/p.yaml", "x");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "cannot write " + dir.path + "/planted/sub/p.yaml: '" + dir.path +
                                   "/planted' is a symbolic link (to '" + dir.path +
                                   "/real'); give a path with no link in it (written as root, "
                                   "a link is followed only where root made it, in a directory "
                                   "only root writes)");
  EXPECT_TRUE(std::filesystem::is_empty(dir.path + "/real"));
  std::filesystem::create_symlink(dir.path + "/real/target", dir.path + "/p.yaml");
  EXPECT_FALSE(writeFileAtomically(dir.path + "/p.yaml", "x").ok());
  EXPECT_FALSE(std::filesystem::exists(dir.path + "/real/target"));
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

// A service's config path is not always a file it controls: a FIFO would block the read with
// no writer, and a huge file would be read whole. Both loaders refuse either, in one line.
TEST(PublishHttpPolicies, TheLoadersRefuseAFifoAndAnOversizedFileWithoutReadingThem) {
  TempDir dir;
  const std::string fifo = dir.path + "/floodgate.yaml";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::string huge = dir.path + "/huge.yaml";
  std::ofstream(huge) << "http: {}\n";
  std::filesystem::resize_file(huge, (4u << 20) + 1);

  // each loader's error for `path`, or "read" when it read the file
  const auto errors = [](const std::string& path) {
    auto loaded = loadHttpConfig(path);
    auto published = publishHttpPolicies(path);
    return std::vector<std::string>{loaded ? "read" : loaded.error().message,
                                    published ? "read" : published.error().message};
  };
  for (const std::string& error : errors(fifo)) {
    EXPECT_EQ(error, fifo + ": cannot read the config file: not a regular file (a FIFO)");
  }
  for (const std::string& error : errors(huge)) {
    EXPECT_EQ(error, huge + ": cannot read the config file: larger than 4 MiB, the most it may be");
  }
}

}  // namespace
}  // namespace floodgate::http
