// The config snapshot: one revision per config whatever order its parts
// come in, and a worker's checks: hash, schemaVersion, shape.
#include "protocols/worker_api/snapshot.hpp"

#include "protocols/config/loader.hpp"

#include "protocols/common/canonical_json.hpp"
#include "protocols/common/sha256.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace qf;
using namespace qf::worker_api;

namespace {

snapshot_content sample() {
  snapshot_content c;
  c.fleet.clusters = {{"duck", R"({"engine":"duckDb","maxRunningQueries":4})"},
                      {"pg", R"({"engine":"postgres","endpoint":"postgres://u:secret@db/x"})"}};
  c.fleet.groups = {{"g", R"({"members":["duck","pg"],"strategy":{"type":"roundRobin"}})"}};
  c.fleet.routers = {R"({"type":"header","headerName":"x-g","headerValueToGroup":{"a":"g"}})"};
  c.fleet.routing_fallback = "g";
  c.policy.auth_json = R"({"provider":"none"})";
  c.policy.monitor_json = R"({"taskDelay":"60000ms","checkTimeout":"10000ms"})";
  c.policy.redaction = config::redaction::mask_literals;
  return c;
}

encoded_snapshot encoded(const snapshot_content& c) {
  std::string error;
  auto s = encode(c, error);
  EXPECT_TRUE(s) << error;
  return s.value_or(encoded_snapshot{});
}

} // namespace

TEST(worker_snapshot, the_same_config_has_the_same_revision_whatever_the_order) {
  auto a = sample();
  auto b = sample();
  std::swap(b.fleet.clusters[0], b.fleet.clusters[1]); // rows in another order
  b.fleet.clusters[0].second = R"({"endpoint":"postgres://u:secret@db/x", "engine":"postgres"})";
  EXPECT_EQ(encoded(a).revision, encoded(b).revision);
  EXPECT_EQ(encoded(a).payload, encoded(b).payload);
  EXPECT_EQ(encoded(a).revision.rfind("sha256:", 0), 0u);
  // Router order is meaning: another order is another config.
  auto c = sample();
  c.fleet.routers.push_back(R"({"type":"userGroup","userToGroup":{}})");
  auto d = c;
  std::swap(d.fleet.routers[0], d.fleet.routers[1]);
  EXPECT_NE(encoded(c).revision, encoded(d).revision);
  // Any change of a value is a new revision, credentials included.
  auto e = sample();
  e.fleet.clusters[1].second = R"({"engine":"postgres","endpoint":"postgres://u:other@db/x"})";
  EXPECT_NE(encoded(a).revision, encoded(e).revision);
}

TEST(worker_snapshot, a_served_body_decodes_to_what_was_encoded) {
  auto s = encoded(sample());
  auto out = decode(config_body(s));
  ASSERT_TRUE(out.snapshot) << out.error;
  EXPECT_EQ(out.snapshot->encoded.revision, s.revision);
  EXPECT_EQ(out.snapshot->encoded.payload, s.payload);
  const auto& c = out.snapshot->content;
  ASSERT_EQ(c.fleet.clusters.size(), 2u);
  EXPECT_EQ(c.fleet.clusters[1].first, "pg");
  EXPECT_NE(c.fleet.clusters[1].second.find("secret"), std::string::npos);
  EXPECT_EQ(c.fleet.routing_fallback, "g");
  EXPECT_EQ(c.policy.redaction, config::redaction::mask_literals);
  EXPECT_FALSE(c.policy.history_endpoint);
  EXPECT_FALSE(out.snapshot->confirmed_at_ms);
  auto peer = decode(peer_body(s, 1700000000123));
  ASSERT_TRUE(peer.snapshot) << peer.error;
  EXPECT_EQ(peer.snapshot->confirmed_at_ms, 1700000000123);
}

TEST(worker_snapshot, a_tampered_truncated_or_unknown_snapshot_is_rejected) {
  auto s = encoded(sample());
  auto body = config_body(s);
  auto tampered = body;
  tampered.replace(tampered.find("secret"), 6, "SECRET");
  EXPECT_NE(decode(tampered).error.find("is not the hash of its content"), std::string::npos);
  EXPECT_EQ(decode(body.substr(0, body.size() / 2)).error,
            "the snapshot is not a JSON object (truncated?)");
  EXPECT_EQ(decode("<html>bad gateway</html>").error,
            "the snapshot is not a JSON object (truncated?)");
  EXPECT_EQ(decode(R"({"snapshot":{}})").error,
            "the snapshot has no revision (sha256:<64 hex digits>)");
  // A future control plane's format: the hash is right, the version is not.
  auto future = nlohmann::json::parse(s.payload);
  future["schemaVersion"] = 2;
  auto body2 = nlohmann::json{{"revision", s.revision}, {"snapshot", future}}.dump();
  EXPECT_EQ(decode(body2).error,
            "unknown snapshot schemaVersion 2 (this worker reads 1): upgrade the worker");
  EXPECT_EQ(decode(std::string(70, '[')).error, "the snapshot nests deeper than 64 levels");
}

TEST(worker_snapshot, a_correctly_hashed_snapshot_of_the_wrong_shape_is_rejected) {
  // Each edit is hashed as sent, so that only the shape is wrong.
  auto error_after = [](auto edit) {
    auto doc = nlohmann::json::parse(encoded(sample()).payload);
    edit(doc);
    auto payload = json_text::canonical(doc).value();
    auto body = config_body({"sha256:" + sha256_hex(payload), payload});
    return decode(body).error;
  };
  using nlohmann::json;
  EXPECT_EQ(error_after([](json& d) { d["clusters"] = json::array(); }),
            "snapshot.clusters must map each name to an object");
  EXPECT_EQ(error_after([](json& d) { d["clusterGroups"]["g"] = 3; }),
            "snapshot.clusterGroups must map each name to an object");
  EXPECT_EQ(error_after([](json& d) { d.erase("routers"); }), "snapshot.routers must be a list");
  EXPECT_EQ(error_after([](json& d) { d["routingFallback"] = 1; }),
            "snapshot.routingFallback must be a group name or null");
  EXPECT_EQ(error_after([](json& d) { d["history"]["redaction"] = "none"; }),
            "snapshot.history.redaction must be full, maskLiterals or metadata");
  EXPECT_EQ(error_after([](json& d) { d["translation"]["errorOnUnsupported"] = "yes"; }),
            "snapshot.translation.errorOnUnsupported must be true or false");
  EXPECT_EQ(error_after([](json&) {}), ""); // unchanged: accepted
}

TEST(worker_snapshot, the_monitor_goes_to_workers_with_only_what_differs_from_the_defaults) {
  auto loaded = config::load_from_string(R"(
queryflux:
  frontends: { trinoHttp: { port: 18080 } }
monitor: { taskDelay: 5s, type: METRICS, retries: 2, metricMaximumValues: { queued: 9 } }
clusters: { t: { engine: trino, endpoint: "http://t:8080" } }
clusterGroups: { g: { members: [t] } }
)");
  ASSERT_TRUE(loaded.config);
  auto m = nlohmann::json::parse(policy_of(*loaded.config).monitor_json);
  EXPECT_EQ(m, nlohmann::json::parse(R"({"taskDelay":"5000ms","checkTimeout":"10000ms",
    "type":"METRICS","retries":2,"metricMaximumValues":{"queued":9.0}})"));
  // A fleet that sets none of the probe's keys has the snapshot it had
  // before probes existed (and older workers read it).
  auto plain = config::load_from_string(R"(
queryflux:
  frontends: { trinoHttp: { port: 18080 } }
clusters: { d: { engine: duckDb } }
clusterGroups: { g: { members: [d] } }
)");
  ASSERT_TRUE(plain.config);
  EXPECT_EQ(nlohmann::json::parse(policy_of(*plain.config).monitor_json),
            nlohmann::json::parse(R"({"taskDelay":"60000ms","checkTimeout":"10000ms"})"));
}
