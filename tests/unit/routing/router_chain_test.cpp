// The router chain: order, first match wins, deny, fallback, trace.
#include "actors/routing/router_chain.hpp"

#include "protocols/config/loader.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace qf;

namespace {

class router_chain_test : public ::testing::Test {
protected:
  router_chain_test() {
    auto r = config::load_from_string(R"(
queryflux: {}
clusters: { a: { engine: sqlite } }
clusterGroups:
  default: { members: [a] }
  bi: { members: [a] }
  etl: { members: [a] }
  cold: { members: [a] }
  pg: { members: [a] }
routers:
  - type: queryRegex
    rules:
      - { regex: "(?i)^\\s*(drop|truncate)\\b", action: deny, error: "DDL is not allowed" }
      - { regex: "(?i)from\\s+archive\\.", targetGroup: cold }
  - { type: protocolBased, postgresWire: pg }
  - { type: header, headerName: X-Target-Group, headerValueToGroup: { bi: bi } }
  - { type: tags, rules: [ { tags: { team: bi }, targetGroup: bi }, { tags: { batch: null }, targetGroup: etl } ] }
  - { type: userGroup, userToGroup: { etl_bot: etl } }
routingFallback: default
)");
    EXPECT_TRUE(r.config) << (r.problems.empty() ? "" : r.problems[0]);
    chain = std::make_unique<routing::router_chain>(r.config->routers,
                                                    r.config->routing_fallback);
  }

  routing::decision route(routing::route_request req) {
    return chain->route(req);
  }

  std::unique_ptr<routing::router_chain> chain;
};

} // namespace

TEST_F(router_chain_test, nothing_matches_so_the_fallback_takes_it) {
  auto d = route({config::protocol::trino_http, "alice", {}, {}, "SELECT 1"});
  EXPECT_EQ(d.group, "default");
  EXPECT_TRUE(d.used_fallback);
  EXPECT_FALSE(d.denied);
  ASSERT_EQ(d.trace.size(), 5u);
  for (const auto& step : d.trace)
    EXPECT_FALSE(step.matched);
}

TEST_F(router_chain_test, regex_deny_stops_the_chain_with_its_message) {
  auto d = route({config::protocol::trino_http, "etl_bot", {}, {},
                  "  DROP TABLE x"});
  EXPECT_TRUE(d.denied);
  EXPECT_EQ(d.deny_message, "DDL is not allowed");
  EXPECT_TRUE(d.group.empty());
  ASSERT_EQ(d.trace.size(), 1u);
  EXPECT_EQ(d.trace[0].router, "queryRegex");
  EXPECT_TRUE(d.trace[0].matched);
}

TEST_F(router_chain_test, regex_route_is_case_insensitive_with_flag) {
  auto d = route({config::protocol::trino_http, "", {}, {},
                  "select * FROM Archive.t"});
  EXPECT_EQ(d.group, "cold");
}

TEST_F(router_chain_test, first_match_wins_in_chain_order) {
  // Both the header and the user match; the header router comes first.
  auto d = route({config::protocol::trino_http, "etl_bot",
                  {{"x-target-group", "bi"}}, {}, "SELECT 1"});
  EXPECT_EQ(d.group, "bi");
  EXPECT_EQ(d.trace.back().router, "header");
}

TEST_F(router_chain_test, protocol_router_matches_only_its_protocols) {
  EXPECT_EQ(route({config::protocol::postgres_wire, "", {}, {}, "x"}).group,
            "pg");
  EXPECT_EQ(route({config::protocol::trino_http, "", {}, {}, "x"}).group,
            "default");
}

TEST_F(router_chain_test, header_value_must_be_mapped) {
  auto d = route({config::protocol::trino_http, "", {{"x-target-group", "nope"}},
                  {}, "x"});
  EXPECT_TRUE(d.used_fallback);
}

TEST_F(router_chain_test, tags_need_every_listed_tag_and_null_matches_any) {
  EXPECT_EQ(route({config::protocol::trino_http, "", {}, {{"team", "bi"}}, "x"})
              .group,
            "bi");
  EXPECT_EQ(route({config::protocol::trino_http, "", {}, {{"team", "ops"}}, "x"})
              .group,
            "default");
  EXPECT_EQ(route({config::protocol::trino_http, "", {},
                   {{"batch", std::nullopt}}, "x"})
              .group,
            "etl");
  EXPECT_EQ(route({config::protocol::trino_http, "", {}, {{"batch", "nightly"}},
                   "x"})
              .group,
            "etl");
}

TEST_F(router_chain_test, user_router_matches_exact_names) {
  EXPECT_EQ(route({config::protocol::trino_http, "etl_bot", {}, {}, "x"}).group,
            "etl");
  EXPECT_EQ(route({config::protocol::trino_http, "ETL_BOT", {}, {}, "x"}).group,
            "default");
}

TEST_F(router_chain_test, trace_serialises_to_json) {
  auto d = route({config::protocol::trino_http, "etl_bot", {}, {}, "SELECT 1"});
  auto j = nlohmann::json::parse(routing::trace_to_json(d));
  EXPECT_EQ(j["finalGroup"], "etl");
  EXPECT_EQ(j["usedFallback"], false);
  EXPECT_EQ(j["denied"], false);
  ASSERT_EQ(j["decisions"].size(), 5u);
  EXPECT_EQ(j["decisions"][4]["routerType"], "userGroup");
  EXPECT_EQ(j["decisions"][4]["matched"], true);
  EXPECT_EQ(j["decisions"][4]["result"], "etl");
  EXPECT_TRUE(j["decisions"][0]["result"].is_null());
}

TEST_F(router_chain_test, huge_sql_is_matched_in_linear_time) {
  // RE2 has no backtracking: a pathological input cannot hang routing.
  std::string sql(2'000'000, 'a');
  auto d = route({config::protocol::trino_http, "", {}, {}, sql});
  EXPECT_EQ(d.group, "default");
}
