// Worker mode in the config: workerApi on the control plane, a worker's own
// keys, and every key a worker may not hold, listed at once with its path.
#include "protocols/config/fleet.hpp"
#include "protocols/config/loader.hpp"

#include <gtest/gtest.h>

#include <algorithm>

using namespace qf::config;
using namespace std::chrono_literals;

namespace {

bool has_problem(const load_result& r, const std::string& text) {
  return std::find(r.problems.begin(), r.problems.end(), text) != r.problems.end();
}

std::string all_problems(const load_result& r) {
  std::string out;
  for (const auto& p : r.problems)
    out += p + "\n";
  return out;
}

constexpr const char* worker_yaml = R"(
queryflux:
  role: worker
  workerName: checkout-7f9c
  workerLabels: { team: checkout }
  workerLabelsFile: /etc/podinfo/labels
  controlPlane:
    url: https://queryflux-control:9000/
    auth: { mode: sharedSecret, sharedSecret: s3cret-s3cret-s3cret }
    pollTimeoutSecs: 20
    heartbeatIntervalSecs: 5
    tls: { caFile: /etc/ca.pem }
    peerBootstrap: { address: "queryflux-workers:9000", afterSecs: 3, maxAgeSecs: 600 }
  coordination: { mode: local, onUnavailable: localLimits }
  history: { endpoint: "https://history.example/ingest", spoolMaxRecords: 1000 }
  frontends: { trinoHttp: { port: 18080 } }
  adminApi: { port: 19000 }
translation: { pythonScripts: [/etc/fix.py], schemaResolutionTimeoutMs: 500 }
)";

} // namespace

TEST(config_worker, a_worker_config_reads_every_key_of_the_spec) {
  auto r = load_from_string(worker_yaml);
  ASSERT_TRUE(r.config) << all_problems(r);
  const auto& q = r.config->queryflux;
  EXPECT_EQ(q.role, node_role::worker);
  EXPECT_EQ(q.worker_name, "checkout-7f9c");
  EXPECT_EQ(q.worker_labels.at("team"), "checkout");
  EXPECT_EQ(q.worker_labels_file, "/etc/podinfo/labels");
  EXPECT_EQ(q.control_plane.url, "https://queryflux-control:9000");
  EXPECT_EQ(q.control_plane.shared_secret, "s3cret-s3cret-s3cret");
  EXPECT_EQ(q.control_plane.poll_timeout, 20s);
  EXPECT_EQ(q.control_plane.heartbeat_interval, 5s);
  EXPECT_FALSE(q.control_plane.allow_insecure_http);
  EXPECT_EQ(q.control_plane.tls_ca_file, "/etc/ca.pem");
  ASSERT_TRUE(q.control_plane.peer_bootstrap);
  EXPECT_EQ(q.control_plane.peer_bootstrap->address, "queryflux-workers:9000");
  EXPECT_EQ(q.control_plane.peer_bootstrap->after, 3s);
  EXPECT_EQ(q.control_plane.peer_bootstrap->max_age, 600s);
  EXPECT_EQ(q.coordination.mode, coordination_mode::local);
  EXPECT_EQ(q.coordination.on_unavailable, unavailable_policy::local_limits);
  EXPECT_EQ(q.history.endpoint, "https://history.example/ingest");
  EXPECT_EQ(q.history.spool_max_records, 1000u);
  EXPECT_EQ(q.admin.port, 19000);
  EXPECT_TRUE(r.config->clusters.empty()); // they come with the snapshot
  EXPECT_EQ(r.config->translation.python_scripts, std::vector<std::string>{"/etc/fix.py"});
  EXPECT_EQ(r.config->translation.schema_resolution_timeout, 500ms);
}

TEST(config_worker, the_spec_defaults_hold_when_keys_are_left_out) {
  auto r = load_from_string(R"(
queryflux:
  role: worker
  controlPlane: { url: "https://cp:9000", auth: { mode: sharedSecret, sharedSecret: x } }
)");
  ASSERT_TRUE(r.config) << all_problems(r);
  const auto& q = r.config->queryflux;
  EXPECT_EQ(q.control_plane.poll_timeout, 30s);
  EXPECT_EQ(q.control_plane.heartbeat_interval, 10s);
  EXPECT_FALSE(q.control_plane.peer_bootstrap);
  EXPECT_EQ(q.coordination.mode, coordination_mode::control_plane);
  EXPECT_EQ(q.coordination.on_unavailable, unavailable_policy::fail_closed);
  EXPECT_EQ(q.history.spool_max_records, 50000u);
  EXPECT_FALSE(q.history.endpoint);
  EXPECT_TRUE(q.worker_name.empty()); // the host name, filled in at start
}

TEST(config_worker, everything_the_control_plane_owns_is_refused_all_at_once_with_its_path) {
  auto r = load_from_string(R"(
queryflux:
  role: worker
  controlPlane: { url: "https://cp:9000", auth: { mode: sharedSecret, sharedSecret: x } }
  persistence: { type: postgres, url: "postgres://qf@db/qf" }
  workerApi: { enabled: true, sharedSecret: 0123456789abcdef }
  adminApi: { port: 9000, username: admin, password: admin }
clusters: { d: { engine: duckDb } }
clusterGroups: { g: { members: [d] } }
routers: []
routingFallback: g
auth: { provider: none }
authorization: { provider: none }
catalogProvider: { type: null }
guardrails: { global: [] }
accessControl: { enabled: false }
databaseCache: { enabled: true }
translation: { mode: strict, errorOnUnsupported: true, pythonScripts: [] }
)");
  EXPECT_FALSE(r.config);
  for (const auto* p : {
         "clusters: owned by the control plane: a worker receives it in its config snapshot",
         "clusterGroups: owned by the control plane: a worker receives it in its config snapshot",
         "routers: owned by the control plane: a worker receives it in its config snapshot",
         "routingFallback: owned by the control plane: a worker receives it in its config "
         "snapshot",
         "auth: owned by the control plane: a worker receives it in its config snapshot",
         "authorization: owned by the control plane: not allowed in a worker config",
         "catalogProvider: owned by the control plane: not allowed in a worker config",
         "guardrails: owned by the control plane: not allowed in a worker config",
         "accessControl: owned by the control plane: not allowed in a worker config",
         "databaseCache: owned by the control plane: not allowed in a worker config",
         "queryflux.persistence.type: owned by the control plane: a worker never connects to a "
         "database (only inMemory)",
         "queryflux.workerApi: owned by the control plane: workers do not serve workers",
       })
    EXPECT_TRUE(has_problem(r, p)) << p << "\n" << all_problems(r);
  for (auto key : {"mode", "errorOnUnsupported"})
    EXPECT_TRUE(std::any_of(r.problems.begin(), r.problems.end(), [&](const std::string& p) {
      return p.rfind(std::string{"translation."} + key + ": owned by the control plane", 0) == 0;
    })) << key << "\n" << all_problems(r);
  EXPECT_TRUE(std::any_of(r.problems.begin(), r.problems.end(), [](const std::string& p) {
    return p.rfind("queryflux.adminApi.username: a worker has no admin API", 0) == 0;
  })) << all_problems(r);
  // Named as the control plane's, not as unknown keys.
  EXPECT_FALSE(std::any_of(r.problems.begin(), r.problems.end(), [](const std::string& p) {
    return p.find("unknown key") != std::string::npos;
  })) << all_problems(r);
}

TEST(config_worker, plain_http_to_the_control_plane_needs_allow_insecure_http) {
  auto refused = load_from_string(R"(
queryflux:
  role: worker
  controlPlane: { url: "http://cp:9000", auth: { mode: sharedSecret, sharedSecret: x } }
)");
  EXPECT_FALSE(refused.config);
  EXPECT_TRUE(has_problem(refused, "queryflux.controlPlane.url: http:// would carry the "
                                   "snapshot's cluster credentials in clear: use https://, or "
                                   "set queryflux.controlPlane.allowInsecureHttp: true (local "
                                   "demos only)"))
    << all_problems(refused);
  auto allowed = load_from_string(R"(
queryflux:
  role: worker
  controlPlane:
    url: "http://cp:9000"
    allowInsecureHttp: true
    auth: { mode: sharedSecret, sharedSecret: x }
)");
  EXPECT_TRUE(allowed.config) << all_problems(allowed);
}

TEST(config_worker, a_worker_without_its_way_to_the_control_plane_is_refused) {
  auto none = load_from_string("queryflux: { role: worker }\n");
  EXPECT_TRUE(has_problem(none, "queryflux.controlPlane: missing: a worker pulls its config from "
                                "a control plane"))
    << all_problems(none);
  auto bad = load_from_string(R"(
queryflux:
  role: worker
  workerName: "not a name!"
  controlPlane:
    url: "ftp://cp"
    auth: { mode: mtls }
    pollTimeoutSecs: 0
    heartbeatIntervalSecs: 3601
    peerBootstrap: { address: nohost }
  coordination: { mode: global, onUnavailable: hope }
  history: { endpoint: "file:///tmp", spoolMaxRecords: 0 }
)");
  for (const auto* p : {
         "queryflux.workerName: expected 1 to 253 letters, digits, '-', '_' or '.'",
         "queryflux.controlPlane.url: expected an https:// URL",
         "queryflux.controlPlane.auth.mode: expected sharedSecret",
         "queryflux.controlPlane.auth.sharedSecret: missing: the control plane's "
         "workerApi.sharedSecret",
         "queryflux.controlPlane.pollTimeoutSecs: must be at least 1",
         "queryflux.controlPlane.heartbeatIntervalSecs: expected a whole number from 0 to 3600",
         "queryflux.controlPlane.peerBootstrap.address: expected host:port (an IPv6 address in "
         "brackets)",
         "queryflux.coordination.mode: expected controlPlane or local",
         "queryflux.coordination.onUnavailable: expected failClosed or localLimits",
         "queryflux.history.endpoint: expected an http:// or https:// URL, or null",
         "queryflux.history.spoolMaxRecords: must be at least 1",
       })
    EXPECT_TRUE(has_problem(bad, p)) << p << "\n" << all_problems(bad);
}

TEST(config_worker, worker_keys_on_another_role_are_refused) {
  auto r = load_from_string(R"(
queryflux:
  workerName: w1
  controlPlane: { url: "https://cp:9000" }
  coordination: { mode: local }
clusters: { d: { engine: duckDb } }
clusterGroups: { g: { members: [d] } }
)");
  for (const auto* p : {"queryflux.workerName: only a worker (role: worker) reads this",
                        "queryflux.controlPlane: only a worker (role: worker) reads this",
                        "queryflux.coordination: only a worker (role: worker) reads this"})
    EXPECT_TRUE(has_problem(r, p)) << p << "\n" << all_problems(r);
}

TEST(config_worker, the_worker_api_is_read_as_the_spec_writes_it) {
  auto r = load_from_string(R"(
queryflux:
  workerApi:
    enabled: true
    sharedSecret: long-random-secret-0123
    history: { endpoint: null, redaction: maskLiterals }
  adminApi: { port: 9000, tls: { certFile: /tls/crt.pem, keyFile: /tls/key.pem } }
clusters: { d: { engine: duckDb } }
clusterGroups: { g: { members: [d] } }
)");
  ASSERT_TRUE(r.config) << all_problems(r);
  const auto& api = r.config->queryflux.worker_api;
  EXPECT_TRUE(api.enabled);
  EXPECT_EQ(api.shared_secret, "long-random-secret-0123");
  EXPECT_FALSE(api.history_endpoint);
  EXPECT_EQ(api.history_redaction, redaction::mask_literals);
  EXPECT_EQ(r.config->queryflux.admin.tls_cert_file, "/tls/crt.pem");
  auto bad = load_from_string(R"(
queryflux:
  workerApi: { enabled: true, sharedSecret: short, history: { redaction: some } }
  adminApi: { tls: { certFile: /x } }
clusters: { d: { engine: duckDb } }
clusterGroups: { g: { members: [d] } }
)");
  for (const auto* p : {"queryflux.workerApi.sharedSecret: too short: use 16 characters or more, "
                        "random",
                        "queryflux.workerApi.history.redaction: expected full, maskLiterals or "
                        "metadata",
                        "queryflux.adminApi.tls: needs both certFile and keyFile"})
    EXPECT_TRUE(has_problem(bad, p)) << p << "\n" << all_problems(bad);
}

TEST(config_worker, a_snapshot_compiles_on_the_workers_file_strictly) {
  fleet f;
  f.clusters = {{"duck", R"({"engine":"duckDb","maxRunningQueries":4})"}};
  f.groups = {{"g", R"({"members":["duck"]})"}};
  auto r = load_worker_config(worker_yaml, f, R"({"provider":"none"})",
                              R"({"taskDelay":"5000ms","checkTimeout":"1000ms"})");
  ASSERT_TRUE(r.config) << all_problems(r);
  EXPECT_EQ(r.config->queryflux.role, node_role::worker);
  ASSERT_EQ(r.config->clusters.size(), 1u);
  EXPECT_EQ(r.config->clusters[0].max_running_queries, 4u);
  EXPECT_EQ(r.config->routing_fallback, "g");
  EXPECT_EQ(r.config->health.task_delay, 5000ms);
  // One bad regex rejects the whole snapshot.
  f.routers = {R"({"type":"queryRegex","rules":[{"regex":"(unclosed","targetGroup":"g"}]})"};
  auto bad = load_worker_config(worker_yaml, f, "", "");
  EXPECT_FALSE(bad.config);
  EXPECT_TRUE(std::any_of(bad.problems.begin(), bad.problems.end(), [](const std::string& p) {
    return p.rfind("routers[0].rules[0].regex: invalid regex", 0) == 0;
  })) << all_problems(bad);
}

TEST(config_worker, a_snapshots_monitor_sets_the_probe_of_the_workers_clusters) {
  fleet f;
  f.clusters = {{"t", R"({"engine":"trino","endpoint":"http://t:8080"})"},
                {"u", R"({"engine":"trino","endpoint":"http://u:8080","monitor":{"type":"NOOP"}})"}};
  f.groups = {{"g", R"({"members":["t","u"],"strategy":{"type":"queryCountBased"}})"}};
  auto r = load_worker_config(worker_yaml, f, R"({"provider":"none"})",
                              R"({"taskDelay":"5000ms","checkTimeout":"1000ms","type":"JMX",)"
                              R"("retries":3})");
  ASSERT_TRUE(r.config) << all_problems(r);
  const auto& m = r.config->health;
  EXPECT_EQ(m.probe_of(r.config->clusters[0]).type, monitor_type::jmx);
  EXPECT_EQ(m.probe_of(r.config->clusters[1]).type, monitor_type::noop);
  EXPECT_EQ(m.probe_of(r.config->clusters[1]).retries, 3u);
  EXPECT_EQ(r.config->groups[0].strategy, strategy_kind::query_count_based);
}
