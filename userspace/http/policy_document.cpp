// SPDX-License-Identifier: MIT
// Rendering the published policies with a content version, and parsing them back.
#include "http/policy_document.h"

#include <cstdio>

#include "http/config_parser.h"

namespace floodgate::http {

namespace {

// FNV-1a, 64 bits: a version only has to change when the content does, not resist forgery
// (whoever can write the document can write any version).
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

}  // namespace

PolicyDocument renderPolicyDocument(const YAML::Node& http) {
  YAML::Node section = YAML::Clone(http);
  if (section.IsMap()) section.remove("publish");
  YAML::Emitter section_text;
  section_text << section;

  PolicyDocument document;
  document.version = contentHash(section_text.c_str());
  YAML::Node root(YAML::NodeType::Map);
  root["version"] = document.version;
  root["http"] = section;
  YAML::Emitter out;
  out << root;
  document.text = std::string(
                      "# Published by floodgate (floodgate run, floodgate http publish); services "
                      "follow it.\n# Edit the http: section of floodgate.yaml instead.\n") +
                  out.c_str() + "\n";
  return document;
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
  auto config = parseHttpConfigText(text, source);
  if (!config) return config.error();
  return PublishedPolicies{version.Scalar(), std::move(*config)};
}

}  // namespace floodgate::http
