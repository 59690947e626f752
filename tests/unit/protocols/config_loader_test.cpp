// The YAML config: defaults, mapping, and every validation problem reported
// with its path.
#include "protocols/config/loader.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

using namespace qf::config;
using namespace std::chrono_literals;

namespace {

constexpr const char* minimal = R"(
queryflux:
  frontends: { trinoHttp: { port: 18080 } }
clusters:
  duck: { engine: duckDb }
clusterGroups:
  g: { members: [duck] }
)";

bool has_problem(const load_result& r, const std::string& text) {
  return std::any_of(r.problems.begin(), r.problems.end(),
                     [&](const std::string& p) { return p == text; });
}

std::string all_problems(const load_result& r) {
  std::string out;
  for (const auto& p : r.problems)
    out += p + "\n";
  return out;
}

} // namespace

TEST(config_loader, minimal_config_gets_the_documented_defaults) {
  auto r = load_from_string(minimal);
  ASSERT_TRUE(r.config) << all_problems(r);
  const auto& c = *r.config;
  EXPECT_EQ(c.queryflux.role, node_role::standalone);
  EXPECT_EQ(c.queryflux.external_address, ""); // nextUri: the address the client used
  EXPECT_TRUE(c.queryflux.trino_http.enabled);
  EXPECT_EQ(c.queryflux.trino_http.port, 18080);
  EXPECT_FALSE(c.queryflux.postgres_wire.enabled);
  EXPECT_EQ(c.queryflux.wire_threads, 0u); // half the cores, at least one
  EXPECT_EQ(c.queryflux.admin.port, 9000);
  EXPECT_EQ(c.queryflux.shutdown_drain_timeout, 30s);
  EXPECT_EQ(c.health.task_delay, 1min);
  ASSERT_EQ(c.clusters.size(), 1u);
  EXPECT_EQ(c.clusters[0].engine, engine_kind::duck_db);
  EXPECT_TRUE(c.clusters[0].enabled);
  EXPECT_FALSE(c.clusters[0].max_running_queries);
  EXPECT_FALSE(c.clusters[0].external_access); // clients' SQL stays in its database
  ASSERT_EQ(c.groups.size(), 1u);
  EXPECT_EQ(c.groups[0].strategy, strategy_kind::round_robin);
  EXPECT_EQ(c.groups[0].capacity_wait_timeout, 300s);
  // A single group is the fallback without saying so.
  EXPECT_EQ(c.routing_fallback, "g");
}

TEST(config_loader, maps_every_section) {
  auto r = load_from_string(R"(
queryflux:
  externalAddress: http://gw.example:8080/
  frontends:
    trinoHttp: { enabled: true, port: 8081, maxConnections: 50, queryClientTimeout: 90s, maxPageRows: 100 }
  adminApi: { port: 9100, username: ops, password: s3cret }
  shutdownDrainTimeoutSecs: 5
  wireThreads: 3
monitor: { taskDelay: 500ms, checkTimeout: 2s }
clusters:
  a: { engine: duckDb, databasePath: /tmp/a.duckdb, maxRunningQueries: 3, initSql: "SELECT 1" }
  b: { engine: sqlite, enabled: false, healthCheckQuery: "SELECT 2" }
clusterGroups:
  g1: { members: [a, b], maxRunningQueries: 7, maxQueuedQueries: 9, capacityWaitTimeoutSecs: 4, strategy: { type: leastLoaded } }
  g2: { members: [b], enabled: false, strategy: { type: failover } }
routers:
  - { type: protocolBased, trinoHttp: g1 }
  - { type: header, headerName: X-Target, headerValueToGroup: { two: g2 } }
  - { type: userGroup, userToGroup: { bob: g2 } }
  - type: queryRegex
    rules:
      - { regex: "(?i)^drop", action: deny }
      - { regex: "archive", targetGroup: g2 }
  - type: tags
    rules: [ { tags: { team: bi, adhoc: null }, targetGroup: g2 } ]
routingFallback: g1
)");
  ASSERT_TRUE(r.config) << all_problems(r);
  const auto& c = *r.config;
  EXPECT_EQ(c.queryflux.external_address, "http://gw.example:8080");
  EXPECT_EQ(c.queryflux.trino_http.max_connections, 50u);
  EXPECT_EQ(c.queryflux.trino_http.query_client_timeout, 90s);
  EXPECT_EQ(c.queryflux.trino_http.max_page_rows, 100u);
  EXPECT_EQ(c.queryflux.admin.username, "ops");
  EXPECT_EQ(c.queryflux.shutdown_drain_timeout, 5s);
  EXPECT_EQ(c.queryflux.wire_threads, 3u);
  EXPECT_EQ(c.health.task_delay, 500ms);
  EXPECT_EQ(c.health.check_timeout, 2s);
  const auto* a = c.find_cluster("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->database_path, "/tmp/a.duckdb");
  EXPECT_EQ(a->max_running_queries, 3u);
  EXPECT_EQ(a->init_sql, std::vector<std::string>{"SELECT 1"});
  const auto* b = c.find_cluster("b");
  ASSERT_NE(b, nullptr);
  EXPECT_FALSE(b->enabled);
  EXPECT_EQ(b->health_check_query, "SELECT 2");
  const auto* g1 = c.find_group("g1");
  ASSERT_NE(g1, nullptr);
  EXPECT_EQ(g1->members, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(g1->max_running_queries, 7u);
  EXPECT_EQ(g1->max_queued_queries, 9u);
  EXPECT_EQ(g1->capacity_wait_timeout, 4s);
  EXPECT_EQ(g1->strategy, strategy_kind::least_loaded);
  EXPECT_FALSE(c.find_group("g2")->enabled);
  ASSERT_EQ(c.routers.size(), 5u);
  EXPECT_EQ(c.routers[1].header_name, "x-target"); // names are lowercased
  EXPECT_TRUE(c.routers[3].regex_rules[0].deny);
  EXPECT_EQ(c.routers[3].regex_rules[0].error, "Query denied by routing rule");
  EXPECT_FALSE(c.routers[4].tag_rules[0].tags.at("adhoc"));
  EXPECT_EQ(c.routers[4].tag_rules[0].tags.at("team"), "bi");
}

TEST(config_loader, reports_every_problem_at_once_with_its_path) {
  auto r = load_from_string(R"(
queryflux:
  frontends:
    trinoHttp: { port: 9000, colour: blue }
  adminApi: { port: 9000 }
  shutdownDrainTimeoutSecs: soon
  wireThreads: 65
monitor: { taskDelay: 10 }
clusters:
  duck: { engine: duckDb, maxRunningQueries: -1 }
  odd: { engine: oracle }
clusterGroups:
  bi: { members: [duck, x], strategy: { type: weighted } }
routers:
  - { type: queryRegex, rules: [ { regex: "(unclosed", targetGroup: bi } ] }
  - { type: userGroup, userToGroup: { bob: nowhere } }
  - { type: compound }
routingFallback: missing
)");
  EXPECT_FALSE(r.config);
  EXPECT_TRUE(has_problem(r, "queryflux.frontends.trinoHttp.colour: unknown key"))
    << all_problems(r);
  EXPECT_TRUE(has_problem(
    r, "queryflux.frontends.trinoHttp.port: port 9000 is already used by "
       "queryflux.adminApi"))
    << all_problems(r);
  EXPECT_TRUE(has_problem(r, "queryflux.shutdownDrainTimeoutSecs: expected a "
                             "whole number from 0 to 31536000"))
    << all_problems(r);
  EXPECT_TRUE(has_problem(r, "queryflux.wireThreads: expected a whole number from 0 to 64"))
    << all_problems(r);
  EXPECT_TRUE(has_problem(r, "monitor.taskDelay: expected a duration such as "
                             "500ms, 30s, 1m or 1h"))
    << all_problems(r);
  EXPECT_TRUE(has_problem(r, "clusters.duck.maxRunningQueries: expected a "
                             "whole number from 0 to 1000000"))
    << all_problems(r);
  EXPECT_TRUE(has_problem(
    r, "clusters.odd.engine: unknown engine \"oracle\" (duckDb, sqlite, "
       "postgres, mysql or trino)"))
    << all_problems(r);
  EXPECT_TRUE(has_problem(r, "clusterGroups.bi.members[1]: unknown cluster \"x\""))
    << all_problems(r);
  EXPECT_TRUE(has_problem(r, "clusterGroups.bi.strategy.type: unknown strategy "
                             "\"weighted\" (roundRobin, leastLoaded, random, "
                             "failover, queryCountBased)"))
    << all_problems(r);
  EXPECT_TRUE(std::any_of(r.problems.begin(), r.problems.end(),
                          [](const std::string& p) {
                            return p.rfind("routers[0].rules[0].regex: invalid "
                                           "regex: ",
                                           0)
                                   == 0;
                          }))
    << all_problems(r);
  EXPECT_TRUE(has_problem(r, "routers[1].userToGroup.bob: unknown cluster "
                             "group \"nowhere\""))
    << all_problems(r);
  EXPECT_TRUE(has_problem(r, "routers[2].type: unknown router type \"compound\" "
                             "(protocolBased, header, userGroup, queryRegex, "
                             "tags)"))
    << all_problems(r);
  EXPECT_TRUE(has_problem(r, "routingFallback: unknown cluster group "
                             "\"missing\""))
    << all_problems(r);
}

TEST(config_loader, wrong_types_and_missing_sections_are_problems) {
  auto r = load_from_string(R"(
queryflux: [1, 2]
clusters: nope
clusterGroups:
  g: { members: duck, enabled: maybe }
)");
  EXPECT_FALSE(r.config);
  EXPECT_TRUE(has_problem(r, "queryflux: expected a mapping")) << all_problems(r);
  EXPECT_TRUE(has_problem(r, "clusters: expected a mapping")) << all_problems(r);
  EXPECT_TRUE(has_problem(r, "clusterGroups.g.members: expected a list"))
    << all_problems(r);
  EXPECT_TRUE(has_problem(r, "clusterGroups.g.enabled: expected true or false"))
    << all_problems(r);
}

TEST(config_loader, top_level_must_be_a_mapping_and_groups_exist) {
  auto r = load_from_string("just a string");
  EXPECT_FALSE(r.config);
  EXPECT_TRUE(has_problem(r, "expected a mapping")) << all_problems(r);
  auto empty = load_from_string("queryflux: {}\n");
  EXPECT_TRUE(has_problem(empty, "clusterGroups: needs at least one group"))
    << all_problems(empty);
}

TEST(config_loader, several_groups_need_a_fallback) {
  auto r = load_from_string(R"(
queryflux: {}
clusters: { a: { engine: sqlite } }
clusterGroups: { g1: { members: [a] }, g2: { members: [a] } }
)");
  EXPECT_TRUE(has_problem(r, "routingFallback: missing: name the group that "
                             "takes queries no router matched"))
    << all_problems(r);
}

TEST(config_loader, postgres_clusters_need_an_endpoint_or_host) {
  auto r = load_from_string(R"(
queryflux: {}
clusters:
  pg1: { engine: postgres, endpoint: "postgres://u:p@127.0.0.1:15432/db", poolSize: 8 }
  pg2: { engine: postgres, host: 127.0.0.1, port: 15432, database: db, user: u }
  pg3: { engine: postgres }
  pg4: { engine: postgres, endpoint: "mysql://x" }
clusterGroups: { g: { members: [pg1, pg2, pg3, pg4] } }
)");
  EXPECT_TRUE(has_problem(r, "clusters.pg3.endpoint: missing: a postgres:// URL "
                             "or host"))
    << all_problems(r);
  EXPECT_TRUE(has_problem(r, "clusters.pg4.endpoint: expected a postgres:// URL"))
    << all_problems(r);
  EXPECT_EQ(r.problems.size(), 2u) << all_problems(r);
}

TEST(config_loader, persistence_is_in_memory_or_postgres_with_a_url) {
  auto ok = load_from_string(R"(
queryflux:
  persistence: { type: postgres, url: "postgres://qf@127.0.0.1:15432/qf", autoMigrate: false }
clusters: { d: { engine: duckDb } }
clusterGroups: { g: { members: [d] } }
)");
  ASSERT_TRUE(ok.config) << all_problems(ok);
  EXPECT_EQ(ok.config->queryflux.persistence.type, "postgres");
  EXPECT_EQ(ok.config->queryflux.persistence.url, "postgres://qf@127.0.0.1:15432/qf");
  EXPECT_FALSE(ok.config->queryflux.persistence.auto_migrate);
  auto bad = load_from_string(R"(
queryflux:
  persistence: { type: postgres, url: "mysql://x", retries: 3 }
clusters: { d: { engine: duckDb } }
clusterGroups: { g: { members: [d] } }
)");
  EXPECT_TRUE(has_problem(bad, "queryflux.persistence.url: expected a postgres:// URL"))
    << all_problems(bad);
  EXPECT_TRUE(has_problem(bad, "queryflux.persistence.retries: unknown key"))
    << all_problems(bad);
  auto redis = load_from_string("queryflux: { persistence: { type: redis } }\n");
  EXPECT_TRUE(has_problem(redis, "queryflux.persistence.type: unknown type \"redis\" "
                                 "(inMemory or postgres)"))
    << all_problems(redis);
}

TEST(config_loader, mysql_clusters_need_an_endpoint_or_host) {
  auto r = load_from_string(R"(
queryflux: {}
clusters:
  my1: { engine: mysql, endpoint: "mysql://u:p@127.0.0.1:13306/db", poolSize: 8 }
  my2: { engine: mysql, host: 127.0.0.1, port: 13306, database: db, user: u }
  my3: { engine: mysql }
  my4: { engine: mysql, endpoint: "postgres://x" }
clusterGroups: { g: { members: [my1, my2, my3, my4] } }
)");
  EXPECT_TRUE(has_problem(r, "clusters.my3.endpoint: missing: a mysql:// URL "
                             "or host"))
    << all_problems(r);
  EXPECT_TRUE(has_problem(r, "clusters.my4.endpoint: expected a mysql:// URL"))
    << all_problems(r);
  EXPECT_EQ(r.problems.size(), 2u) << all_problems(r);
}

TEST(config_loader, malformed_yaml_reports_its_line) {
  auto r = load_from_string("queryflux:\n  frontends: {\n  oops: [\n");
  ASSERT_FALSE(r.config);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].rfind("line ", 0), 0u) << r.problems[0];
}

TEST(config_loader, environment_variables_are_never_expanded) {
  setenv("QF_TEST_SECRET", "expanded", 1);
  auto r = load_from_string(R"(
queryflux:
  adminApi: { password: "${QF_TEST_SECRET}" }
clusters: { a: { engine: sqlite } }
clusterGroups: { g: { members: [a] } }
)");
  ASSERT_TRUE(r.config) << all_problems(r);
  EXPECT_EQ(r.config->queryflux.admin.password, "${QF_TEST_SECRET}");
}

TEST(config_loader, frontends_not_built_yet_are_refused_clearly) {
  auto r = load_from_string(R"(
queryflux:
  frontends: { flightSql: { port: 13306 } }
clusters: { a: { engine: sqlite } }
clusterGroups: { g: { members: [a] } }
)");
  EXPECT_TRUE(has_problem(r, "queryflux.frontends.flightSql: this frontend "
                             "is not available in this build yet"))
    << all_problems(r);
}

TEST(config_loader, wire_frontends_take_startup_and_idle_transaction_timeouts) {
  auto r = load_from_string(R"(
queryflux:
  frontends:
    postgresWire: { port: 5432, startupTimeout: 5s, idleTransactionTimeout: 2m }
    mysqlWire: { port: 3306 }
clusters: { a: { engine: sqlite } }
clusterGroups: { g: { members: [a] } }
)");
  ASSERT_TRUE(r.config) << all_problems(r);
  EXPECT_EQ(r.config->queryflux.postgres_wire.startup_timeout, 5s);
  EXPECT_EQ(r.config->queryflux.mysql_wire.startup_timeout, 60s); // PostgreSQL's default
  EXPECT_EQ(r.config->queryflux.postgres_wire.idle_transaction_timeout, 2min);
  EXPECT_EQ(r.config->queryflux.mysql_wire.idle_transaction_timeout, 0s); // off, as pgbouncer's
  auto bad = load_from_string(R"(
queryflux:
  frontends:
    mysqlWire: { port: 3306, startupTimeout: 0s, idleTransactionTimeout: soon }
    trinoHttp: { startupTimeout: 5s }
clusters: { a: { engine: sqlite } }
clusterGroups: { g: { members: [a] } }
)");
  EXPECT_TRUE(has_problem(bad, "queryflux.frontends.mysqlWire.idleTransactionTimeout: expected a "
                               "duration such as 500ms, 30s, 1m or 1h"))
    << all_problems(bad);
  EXPECT_TRUE(has_problem(bad, "queryflux.frontends.mysqlWire.startupTimeout: must be longer than 0"))
    << all_problems(bad);
  EXPECT_TRUE(has_problem(bad, "queryflux.frontends.trinoHttp.startupTimeout: unknown key"))
    << all_problems(bad);
}

TEST(config_loader, trino_http_takes_a_header_timeout_and_connection_limits_come_from_descriptors) {
  auto r = load_from_string(R"(
queryflux:
  frontends:
    trinoHttp: { port: 8080, requestHeadersTimeout: 2s }
    postgresWire: { port: 5432, maxConnections: 50 }
clusters: { a: { engine: sqlite } }
clusterGroups: { g: { members: [a] } }
)");
  ASSERT_TRUE(r.config) << all_problems(r);
  EXPECT_EQ(r.config->queryflux.trino_http.request_headers_timeout, 2s);
  EXPECT_EQ(r.config->queryflux.trino_http.max_connections, 0u); // from the descriptor limit
  EXPECT_EQ(r.config->queryflux.postgres_wire.max_connections, 50u);
  auto bad = load_from_string(R"(
queryflux:
  frontends:
    trinoHttp: { port: 8080, requestHeadersTimeout: 0s, maxConnections: 0 }
clusters: { a: { engine: sqlite } }
clusterGroups: { g: { members: [a] } }
)");
  EXPECT_TRUE(has_problem(bad, "queryflux.frontends.trinoHttp.requestHeadersTimeout: must be "
                               "longer than 0"))
    << all_problems(bad);
  EXPECT_TRUE(has_problem(bad, "queryflux.frontends.trinoHttp.maxConnections: must be at least 1 "
                               "(leave it out to size it from the descriptor limit)"))
    << all_problems(bad);
}

TEST(config_loader, unreadable_file_is_a_problem_not_a_crash) {
  auto r = load_from_file("/nonexistent/queryflux.yaml");
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0], "/nonexistent/queryflux.yaml: cannot read the file");
}

TEST(parse_duration, accepts_units_and_rejects_the_rest) {
  EXPECT_EQ(parse_duration("500ms"), 500ms);
  EXPECT_EQ(parse_duration("30s"), 30s);
  EXPECT_EQ(parse_duration("1m"), 1min);
  EXPECT_EQ(parse_duration("2h"), 2h);
  EXPECT_EQ(parse_duration("1d"), 24h);
  EXPECT_FALSE(parse_duration("10"));
  EXPECT_FALSE(parse_duration("m"));
  EXPECT_FALSE(parse_duration("-1s"));
  EXPECT_FALSE(parse_duration("1 m"));
  EXPECT_FALSE(parse_duration("99999999999s"));
}

TEST(config_loader, static_users_and_the_plain_http_guard) {
  auto r = load_from_string(R"(
queryflux: {}
auth:
  provider: static
  allowCleartextWithoutTls: true
  staticUsers: { users: { alice: { password: s3cret }, bob: { password: x } } }
clusters: { a: { engine: sqlite } }
clusterGroups: { g: { members: [a] } }
)");
  ASSERT_TRUE(r.config) << all_problems(r);
  EXPECT_TRUE(r.config->auth.enabled);
  EXPECT_EQ(r.config->auth.users.at("alice"), "s3cret");
  auto guarded = load_from_string(R"(
queryflux: {}
auth: { provider: ldap, staticUsers: { users: { carol: {} } } }
clusters: { a: { engine: sqlite } }
clusterGroups: { g: { members: [a] } }
)");
  EXPECT_TRUE(has_problem(guarded, "auth.provider: unknown provider \"ldap\" "
                                   "(none or static)"))
    << all_problems(guarded);
  EXPECT_TRUE(has_problem(guarded, "auth.staticUsers.users.carol.password: "
                                   "missing"))
    << all_problems(guarded);
}

TEST(config_loader, database_cache_and_reload_interval) {
  auto defaults = load_from_string(minimal);
  ASSERT_TRUE(defaults.config);
  const auto& d = defaults.config->database_cache;
  EXPECT_FALSE(d.enabled);
  EXPECT_EQ(d.expire_after_write, std::chrono::hours(1));
  EXPECT_EQ(d.refresh_after_write, std::chrono::seconds(5));
  EXPECT_EQ(defaults.config->queryflux.config_reload_interval, std::chrono::seconds(30));

  auto set = load_from_string(R"(
queryflux: { configReloadIntervalSecs: 0 }
databaseCache: { enabled: true, expireAfterWrite: null, refreshAfterWrite: 250ms }
clusters: { d: { engine: duckDb } }
clusterGroups: { g: { members: [d] } }
)");
  ASSERT_TRUE(set.config) << all_problems(set);
  EXPECT_TRUE(set.config->database_cache.enabled);
  EXPECT_FALSE(set.config->database_cache.expire_after_write);
  EXPECT_EQ(set.config->database_cache.refresh_after_write, std::chrono::milliseconds(250));
  EXPECT_EQ(set.config->queryflux.config_reload_interval, std::chrono::seconds(0));

  auto bad = load_from_string(R"(
databaseCache: { enabled: maybe, expireAfterWrite: soon, size: 3 }
clusters: { d: { engine: duckDb } }
clusterGroups: { g: { members: [d] } }
)");
  EXPECT_TRUE(has_problem(bad, "databaseCache.enabled: expected true or false")) << all_problems(bad);
  EXPECT_TRUE(has_problem(bad, "databaseCache.expireAfterWrite: expected a duration such as "
                               "500ms, 30s, 1m or 1h"))
    << all_problems(bad);
  EXPECT_TRUE(has_problem(bad, "databaseCache.size: unknown key")) << all_problems(bad);
}

TEST(config_loader, trino_clusters_need_an_http_endpoint_and_take_auth) {
  auto ok = load_from_string(R"(
queryflux: {}
clusters:
  t: { engine: trino, endpoint: "https://trino:8443", auth: { type: basic, username: qf, password: x },
       queryAuth: { type: impersonate }, tls: { caFile: /etc/ca.pem } }
clusterGroups: { g: { members: [t] } }
)");
  ASSERT_TRUE(ok.config) << all_problems(ok);
  const auto& t = ok.config->clusters[0];
  EXPECT_EQ(t.engine, engine_kind::trino);
  EXPECT_EQ(t.auth.type, "basic");
  EXPECT_EQ(t.auth.username, "qf");
  EXPECT_EQ(t.query_auth, "impersonate");
  EXPECT_EQ(t.tls_ca_file, "/etc/ca.pem");
  EXPECT_FALSE(t.tls_insecure_skip_verify);
  auto bad = load_from_string(R"(
queryflux: {}
clusters:
  a: { engine: trino, endpoint: "ftp://trino:8443", auth: { type: bearer } }
  b: { engine: trino, auth: { type: kerberos }, queryAuth: { type: passthrough } }
  c: { engine: duckDb, queryAuth: { type: impersonate } }
clusterGroups: { g: { members: [a, b, c] } }
)");
  for (const char* p : {"clusters.a.endpoint: expected an http:// or https:// URL",
                        "clusters.a.auth.token: missing for bearer auth",
                        "clusters.b.endpoint: missing: the cluster's http:// or https:// URL",
                        "clusters.b.auth.type: expected basic or bearer",
                        "clusters.c.queryAuth.type: only trino clusters impersonate"})
    EXPECT_TRUE(has_problem(bad, p)) << p << "\n" << all_problems(bad);
  EXPECT_TRUE(std::any_of(bad.problems.begin(), bad.problems.end(), [](const std::string& p) {
    return p.rfind("clusters.b.queryAuth.type: expected serviceAccount or impersonate", 0) == 0;
  })) << all_problems(bad);
}

TEST(config_loader, a_control_plane_keeps_its_fleet_in_postgres_and_serves_workers) {
  auto ok = load_from_string(R"(
queryflux:
  role: controlPlane
  persistence: { type: postgres, url: "postgres://qf@db/qf" }
  workerApi: { sharedSecret: 0123456789abcdef-long }
clusters: { d: { engine: duckDb } }
clusterGroups: { g: { members: [d] } }
)");
  ASSERT_TRUE(ok.config) << all_problems(ok);
  EXPECT_EQ(ok.config->queryflux.role, node_role::control_plane);
  EXPECT_TRUE(ok.config->queryflux.worker_api.enabled); // a control plane's default
  auto memory = load_from_string(R"(
queryflux: { role: controlPlane }
clusters: { d: { engine: duckDb } }
clusterGroups: { g: { members: [d] } }
)");
  EXPECT_TRUE(has_problem(memory, "queryflux.persistence.type: a controlPlane keeps the fleet in "
                                  "PostgreSQL: set type: postgres and its url"))
    << all_problems(memory);
  EXPECT_TRUE(has_problem(memory, "queryflux.workerApi: missing: a controlPlane serves workers: "
                                  "set its sharedSecret"))
    << all_problems(memory);
}

TEST(config_loader, external_access_is_for_the_embedded_engines) {
  auto r = load_from_string(R"(
queryflux: {}
clusters:
  duck: { engine: duckDb, externalAccess: true }
  pg: { engine: postgres, endpoint: "postgres://u@h/d", externalAccess: true }
clusterGroups: { g: { members: [duck, pg] } }
)");
  EXPECT_TRUE(has_problem(r, "clusters.pg.externalAccess: only duckDb and sqlite clusters run "
                             "SQL in the gateway"))
    << all_problems(r);
  auto ok = load_from_string(R"(
queryflux: {}
clusters: { duck: { engine: duckDb, externalAccess: true }, lite: { engine: sqlite } }
clusterGroups: { g: { members: [duck, lite] } }
)");
  ASSERT_TRUE(ok.config) << all_problems(ok);
  EXPECT_TRUE(ok.config->clusters[0].external_access);
  EXPECT_FALSE(ok.config->clusters[1].external_access);
}

TEST(config_loader, max_pinned_sessions_is_for_the_server_engines) {
  auto r = load_from_string(R"(
queryflux: {}
clusters:
  duck: { engine: duckDb, maxPinnedSessions: 3 }
  pg: { engine: postgres, endpoint: "postgres://u@h/d", maxPinnedSessions: many }
clusterGroups: { g: { members: [duck, pg] } }
)");
  EXPECT_TRUE(has_problem(r, "clusters.duck.maxPinnedSessions: only postgres and mysql clusters "
                             "keep connections for their clients"))
    << all_problems(r);
  EXPECT_TRUE(has_problem(r, "clusters.pg.maxPinnedSessions: expected a whole number from 0 to 100000"))
    << all_problems(r);
  auto ok = load_from_string(R"(
queryflux: {}
clusters:
  pg: { engine: postgres, endpoint: "postgres://u@h/d", maxPinnedSessions: 3 }
  my: { engine: mysql, endpoint: "mysql://u@h/d" }
clusterGroups: { g: { members: [pg, my] } }
)");
  ASSERT_TRUE(ok.config) << all_problems(ok);
  EXPECT_EQ(ok.config->clusters[0].max_pinned_sessions, 3u);
  EXPECT_EQ(ok.config->clusters[1].max_pinned_sessions, 50u);
}

TEST(config_loader, pipeline_depth_is_postgres_only_and_at_least_one) {
  auto r = load_from_string(R"(
queryflux: {}
clusters:
  my: { engine: mysql, endpoint: "mysql://u@h/d", pipelineDepth: 4 }
  pg: { engine: postgres, endpoint: "postgres://u@h/d", pipelineDepth: 0 }
  deep: { engine: postgres, endpoint: "postgres://u@h/d", pipelineDepth: 65 }
clusterGroups: { g: { members: [my, pg, deep] } }
)");
  EXPECT_TRUE(has_problem(r, "clusters.my.pipelineDepth: only postgres clusters pipeline statements"))
    << all_problems(r);
  EXPECT_TRUE(has_problem(r, "clusters.pg.pipelineDepth: must be at least 1 (1: no pipelining)"))
    << all_problems(r);
  EXPECT_TRUE(has_problem(r, "clusters.deep.pipelineDepth: expected a whole number from 0 to 64"))
    << all_problems(r);
  auto ok = load_from_string(R"(
queryflux: {}
clusters:
  pg: { engine: postgres, endpoint: "postgres://u@h/d", pipelineDepth: 8 }
  other: { engine: postgres, endpoint: "postgres://u@h/d" }
clusterGroups: { g: { members: [pg, other] } }
)");
  ASSERT_TRUE(ok.config) << all_problems(ok);
  EXPECT_EQ(ok.config->clusters[0].pipeline_depth, 8u);
  EXPECT_EQ(ok.config->clusters[1].pipeline_depth, 1u) << "off unless asked for";
}

TEST(config_loader, monitor_types_apply_to_every_cluster_or_one) {
  auto r = load_from_string(R"(
queryflux:
  frontends: { trinoHttp: { port: 18080 } }
monitor:
  taskDelay: 5s
  type: JMX
  retries: 2
  metricMinimumValues: { up: 1 }
clusters:
  t1: { engine: trino, endpoint: "http://t1:8080" }
  t2:
    engine: trino
    endpoint: "http://t2:8080"
    monitor: { type: METRICS, metricMaximumValues: { trino_queued: 50 } }
  duck: { engine: duckDb, monitor: { type: NOOP } }
clusterGroups:
  g: { members: [t1, t2, duck], strategy: { type: queryCountBased } }
)");
  ASSERT_TRUE(r.config) << all_problems(r);
  const auto& c = *r.config;
  EXPECT_EQ(c.health.probe.type, monitor_type::jmx);
  EXPECT_EQ(c.health.probe.retries, 2u);
  EXPECT_EQ(c.health.probe.metric_minimum_values, (std::map<std::string, double>{{"up", 1}}));
  EXPECT_EQ(c.health.probe_of(c.clusters[0]).type, monitor_type::jmx);
  // A cluster's own probe takes what it does not say from the global one.
  const auto& t2 = c.health.probe_of(c.clusters[1]);
  EXPECT_EQ(t2.type, monitor_type::metrics);
  EXPECT_EQ(t2.retries, 2u);
  EXPECT_EQ(t2.metric_minimum_values, (std::map<std::string, double>{{"up", 1}}));
  EXPECT_EQ(t2.metric_maximum_values, (std::map<std::string, double>{{"trino_queued", 50}}));
  EXPECT_EQ(t2.running_queries_metric_name, "trino_execution_name_QueryManager_RunningQueries");
  EXPECT_EQ(c.health.probe_of(c.clusters[2]).type, monitor_type::noop);
  EXPECT_EQ(c.groups[0].strategy, strategy_kind::query_count_based);
}

TEST(config_loader, trino_gateways_monitor_type_key_is_read) {
  auto r = load_from_string(std::string{minimal} + "clusterStatsConfiguration: { monitorType: JDBC }\n");
  ASSERT_TRUE(r.config) << all_problems(r);
  EXPECT_EQ(r.config->health.probe.type, monitor_type::jdbc);
  // The defaults, as Trino Gateway's.
  auto d = load_from_string(minimal);
  ASSERT_TRUE(d.config);
  EXPECT_EQ(d.config->health.probe.type, monitor_type::info_api);
  EXPECT_EQ(d.config->health.probe.retries, 0u);
  EXPECT_EQ(d.config->health.probe.metrics_endpoint, "/metrics");
}

TEST(config_loader, bad_monitors_are_reported_with_their_paths) {
  auto r = load_from_string(R"(
queryflux:
  frontends: { trinoHttp: { port: 18080 } }
clusterStatsConfiguration: { monitorType: UI_API }
monitor:
  type: SNMP
  retries: 99
  metricsEndpoint: metrics
  metricMinimumValues: { up: lots }
  colour: red
clusters:
  pg: { engine: postgres, endpoint: "postgres://u@h/d", monitor: { type: JMX } }
clusterGroups:
  g: { members: [pg] }
)");
  EXPECT_FALSE(r.config);
  for (const auto& p : {
         "clusterStatsConfiguration.monitorType: unknown monitor type \"UI_API\" (INFO_API, JDBC, "
         "JMX, METRICS or NOOP; UI_API is not built: use JDBC for per-user counts)",
         "monitor.type: unknown monitor type \"SNMP\" (INFO_API, JDBC, JMX, METRICS or NOOP)",
         "monitor.retries: expected a whole number from 0 to 10",
         "monitor.metricsEndpoint: expected a path starting with /",
         "monitor.metricMinimumValues.up: expected a number",
         "monitor.colour: unknown key",
         "clusters.pg.monitor.type: JMX reads Trino's own endpoints: only trino clusters"})
    EXPECT_TRUE(has_problem(r, p)) << p << "\n" << all_problems(r);
}

TEST(config_loader, a_global_trino_monitor_leaves_other_engines_to_their_health_query) {
  auto r = load_from_string(R"(
queryflux:
  frontends: { trinoHttp: { port: 18080 } }
monitor: { type: JMX }
clusters:
  t: { engine: trino, endpoint: "http://t:8080" }
  pg: { engine: postgres, endpoint: "postgres://u@h/d", monitor: { retries: 2 } }
clusterGroups:
  g: { members: [t, pg] }
)");
  ASSERT_TRUE(r.config) << all_problems(r);
  EXPECT_EQ(r.config->health.probe_of(r.config->clusters[1]).retries, 2u);
}
