// SPDX-License-Identifier: MIT
// Rendering the published policies with a content version (and, for Redis, a serial and a
// signature), and parsing them back.
#include "floodgate/fleet/policy_document.h"

#include <cstdio>
#include <string_view>

#include "floodgate/core/config_parser.h"
#include "floodgate/fleet/fleet_secret.h"

namespace floodgate::http {

namespace {

constexpr const char* kHeader =
    "# Published by floodgate (floodgate run, floodgate http publish); services "
    "follow it.\n# Edit the http: section of floodgate.yaml instead.\n";
// The signature is the last line; it covers every byte before it.
constexpr std::string_view kSignatureField = "\nsignature: ";

// FNV-1a, 64 bits: a version only has to change when the content does, not resist forgery
// (the signature does that).
std::string contentHash(const std::string& text) {
  uint64_t hash = 14695981039346656037ULL;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return hex;
}

// The signed message: a label of its own (an offender report's MAC never passes as a
// document's), the key the document is published at (one copied to another key is not
// valid there; the channel only carries a hint to GET the key, so the key is what counts),
// then the document up to its signature line.
std::string signatureOf(const PolicySigning& signing, std::string_view body) {
  std::string message = "floodgate policy document v1\n";
  message.append(signing.redis_key).append("\n").append(body);
  return hmacSha256Hex(signing.secret, message);
}

struct Rendered {
  std::string version;
  YAML::Node section;
};

Rendered renderSection(const YAML::Node& http) {
  YAML::Node section = YAML::Clone(http);
  if (section.IsMap()) section.remove("publish");
  YAML::Emitter section_text;
  section_text << section;
  return {contentHash(section_text.c_str()), section};
}

std::string emit(const YAML::Node& root) {
  YAML::Emitter out;
  out << root;
  return std::string(kHeader) + out.c_str() + "\n";
}

// The top-level `key:` of a document that failed its signature check, for the message only.
std::string claimedKey(const std::string& body) {
  try {
    YAML::Node root = YAML::Load(body);
    if (root.IsMap() && root["key"] && root["key"].IsScalar()) return root["key"].Scalar();
  } catch (const YAML::Exception&) {
  }
  return "";
}

}  // namespace

PolicyDocument renderPolicyDocument(const YAML::Node& http) {
  Rendered rendered = renderSection(http);
  YAML::Node root(YAML::NodeType::Map);
  root["version"] = rendered.version;
  root["http"] = rendered.section;
  return {rendered.version, 0, emit(root)};
}

PolicyDocument renderSignedPolicyDocument(const YAML::Node& http, uint64_t serial,
                                          const PolicySigning& signing) {
  Rendered rendered = renderSection(http);
  YAML::Node root(YAML::NodeType::Map);
  root["version"] = rendered.version;
  root["serial"] = serial;
  root["key"] = signing.redis_key;
  root["http"] = rendered.section;
  std::string text = emit(root);  // ends with a newline: the signature line follows it
  text += std::string(kSignatureField.substr(1)) + signatureOf(signing, text) + "\n";
  return {rendered.version, serial, std::move(text)};
}

Result<PublishedPolicies> parsePolicyDocument(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    return Error::failure(source + ":" + std::to_string(e.mark.line + 1) + ":" +
                          std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
  const YAML::Node version = root.IsMap() ? root["version"] : YAML::Node();
  if (!version || !version.IsScalar() || version.Scalar().empty()) {
    return Error::failure(source +
                          ": no version: this is not a policy document published by floodgate "
                          "(write it with 'floodgate http publish --config FILE')");
  }
  uint64_t serial = 0;
  if (const YAML::Node given = root["serial"]) {
    try {
      serial = given.as<uint64_t>();
    } catch (const YAML::Exception&) {
      return Error::failure(source + ":" + std::to_string(given.Mark().line + 1) +
                            ": serial must be a whole number, got '" + given.Scalar() + "'");
    }
  }
  auto config = parseHttpConfigText(text, source);
  if (!config) return config.error();
  return PublishedPolicies{version.Scalar(), serial, std::move(*config)};
}

Result<PublishedPolicies> parseSignedPolicyDocument(const std::string& text,
                                                    const std::string& source,
                                                    const PolicySigning& signing,
                                                    PolicyRefusal* refusal) {
  auto refuse = [refusal](PolicyRefusal reason, std::string message) {
    *refusal = reason;
    return Error::failure(std::move(message));
  };
  if (signing.secret.size() < kMinFleetSecretBytes) {
    // With no secret anyone could compute the "signature": check nothing rather than that.
    return refuse(PolicyRefusal::kBadSignature,
                  source +
                      ": no fleet secret to check the signature with (give the service "
                      "the secret_file the controller signs with)");
  }
  const size_t at = text.rfind(kSignatureField);
  if (at == std::string::npos) {
    return refuse(PolicyRefusal::kUnsigned,
                  source +
                      ": not signed: documents in Redis must be published by floodgate "
                      "with the fleet's secret ('floodgate http publish --config FILE')");
  }
  const std::string body = text.substr(0, at + 1);
  std::string_view given = std::string_view(text).substr(at + kSignatureField.size());
  if (!given.empty() && given.back() == '\n') given.remove_suffix(1);
  if (!macMatches(given, signatureOf(signing, body))) {
    std::string key = claimedKey(body);
    if (!key.empty() && key != signing.redis_key) {
      return refuse(PolicyRefusal::kBadSignature, source + ": signed for redis key '" + key +
                                                      "', not this one (a document " +
                                                      "copied from another key)");
    }
    return refuse(PolicyRefusal::kBadSignature,
                  source +
                      ": its signature does not match: not signed with this fleet's "
                      "secret, or altered (give the controllers and services the same "
                      "secret_file)");
  }
  // Only the signed bytes are parsed: nothing after the signature can add to them.
  auto published = parsePolicyDocument(body, source);
  if (!published) return refuse(PolicyRefusal::kInvalid, published.error().message);
  if (published->serial == 0) {
    return refuse(PolicyRefusal::kInvalid, source + ": signed, but without a serial");
  }
  return published;
}

}  // namespace floodgate::http
