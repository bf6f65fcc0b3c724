// SPDX-License-Identifier: MIT
// publishPolicies: render once, then write the file and SET + PUBLISH in Redis.
#include "http/policy_publisher.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "http/atomic_file.h"
#include "http/config_parser.h"
#include "http/policy_document.h"
#include "http/store_factory.h"

namespace floodgate::http {

namespace {

// A publish happens on a reload, not per request: give Redis time (the store's timeout is
// tuned for decisions, tens of milliseconds).
constexpr int64_t kPublishTimeoutMs = 3000;

Status publishToRedis(const HttpConfig& config, const PolicyDocument& document) {
  redis::Client client(occasionalCallOptions(redisClientOptions(config.store), kPublishTimeoutMs));
  const PublishConfig& publish = config.publish;
  // SET before PUBLISH: a follower woken by the message GETs the new document.
  auto replies =
      client.run({{publish.redis_key, {"SET", publish.redis_key, document.text}},
                  {publish.redis_channel, {"PUBLISH", publish.redis_channel, document.version}}});
  if (!replies) return replies.error();
  for (const redis::Reply& reply : *replies) {
    if (reply.isError()) return Error::failure("redis refused the policies: " + reply.str);
  }
  return okStatus();
}

}  // namespace

std::string PublishReport::describe() const {
  std::string where;
  for (const std::string& target : targets) where += (where.empty() ? "" : ", ") + target;
  return "published http policies version " + version + " to " + where;
}

Result<PublishReport> publishPolicies(const YAML::Node& http, const HttpConfig& config) {
  PolicyDocument document = renderPolicyDocument(http);
  std::string failures;
  if (!config.publish.file.empty()) {
    if (Status s = writeFileAtomically(config.publish.file, document.text); !s) {
      failures += s.error().message;
    }
  }
  if (!config.publish.redis_key.empty()) {
    if (Status s = publishToRedis(config, document); !s) {
      failures += (failures.empty() ? "" : "; ") + std::string("redis key ") +
                  config.publish.redis_key + ": " + s.error().message;
    }
  }
  if (!failures.empty()) return Error::failure("publishing the http policies: " + failures);
  PublishReport report{document.version, {}};
  if (!config.publish.file.empty()) report.targets.push_back(config.publish.file);
  if (!config.publish.redis_key.empty()) {
    report.targets.push_back("redis key " + config.publish.redis_key);
  }
  return report;
}

Result<PublishReport> publishHttpPolicies(const std::string& config_path) {
  std::ifstream in(config_path);
  if (!in) return Error::failure(config_path + ": cannot read the config file (check the path)");
  std::stringstream text;
  text << in.rdbuf();
  // One read for both: what is published is exactly what was validated.
  auto config = parseHttpConfigText(text.str(), config_path);
  if (!config) return config.error();
  if (!config->publish.enabled()) {
    return Error::failure(config_path +
                          ": http.publish is not set; add e.g. publish: {file: "
                          "/run/floodgate/http-policies.yaml} under http:");
  }
  return publishPolicies(YAML::Load(text.str())["http"], *config);
}

}  // namespace floodgate::http
