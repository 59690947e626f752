#include "protocols/config/fleet.hpp"

#include <gtest/gtest.h>

using namespace qf::config;

namespace {

constexpr const char* file_a = R"(
queryflux: { adminApi: { port: 9100 } }
clusters:
  duck: { engine: duckDb, maxRunningQueries: 3, initSql: ["SELECT 'a: b'"] }
  pg: { engine: postgres, endpoint: "postgres://u@h:5432/db", poolSize: "7" }
clusterGroups:
  bi: { members: [duck, pg], maxQueuedQueries: 5, strategy: { type: leastLoaded } }
routers:
  - { type: header, headerName: x-team, headerValueToGroup: { a: bi } }
routingFallback: bi
)";

constexpr const char* file_b = R"(
queryflux: { adminApi: { port: 9200 } }
clusters:
  other: { engine: sqlite }
clusterGroups:
  g: { members: [other] }
)";

} // namespace

TEST(fleet, sections_become_json_that_loads_back_into_the_same_config) {
  auto f = fleet_of(file_a);
  ASSERT_EQ(f.clusters.size(), 2u);
  EXPECT_EQ(f.clusters[0].first, "duck");
  EXPECT_EQ(f.clusters[0].second,
            R"({"engine":"duckDb","maxRunningQueries":3,"initSql":["SELECT 'a: b'"]})");
  EXPECT_EQ(f.clusters[1].second,
            R"({"engine":"postgres","endpoint":"postgres://u@h:5432/db","poolSize":"7"})");
  EXPECT_EQ(f.routing_fallback, "bi");
  ASSERT_EQ(f.routers.size(), 1u);

  // The node-local part comes from the file; the fleet from the database.
  auto r = load_with_fleet(file_b, f);
  ASSERT_TRUE(r.config) << (r.problems.empty() ? "" : r.problems[0]);
  EXPECT_EQ(r.config->queryflux.admin.port, 9200);
  ASSERT_EQ(r.config->clusters.size(), 2u);
  EXPECT_EQ(r.config->clusters[1].pool_size, 7u);
  EXPECT_EQ(r.config->groups[0].name, "bi");
  EXPECT_EQ(r.config->groups[0].max_queued_queries, 5u);
  EXPECT_EQ(r.config->routers.size(), 1u);
  EXPECT_EQ(r.config->routing_fallback, "bi");
  EXPECT_EQ(r.config->clusters[0].init_sql, std::vector<std::string>{"SELECT 'a: b'"});
}

TEST(fleet, a_bad_stored_fleet_is_reported_with_paths) {
  fleet f;
  f.clusters.emplace_back("x", R"({"engine":"oracle"})");
  f.groups.emplace_back("g", R"({"members":["x","missing"]})");
  auto r = load_with_fleet(file_b, f);
  EXPECT_FALSE(r.config);
  bool engine = false, member = false;
  for (const auto& p : r.problems) {
    engine |= p.find("clusters.x.engine") != std::string::npos;
    member |= p.find("clusterGroups.g.members[1]") != std::string::npos;
  }
  EXPECT_TRUE(engine && member);
  f.clusters[0].second = "{not json";
  EXPECT_FALSE(load_with_fleet(file_b, f).config);
}

TEST(fleet, scalars_that_are_not_json_numbers_stay_strings) {
  auto f = fleet_of(R"(
queryflux: {}
clusters:
  d: { engine: duckDb, maxRunningQueries: 007, healthCheckQuery: inf, initSql: ["SELECT 1.5"] }
clusterGroups:
  g: { members: [d], maxQueuedQueries: 12 }
)");
  EXPECT_EQ(f.clusters[0].second,
            R"({"engine":"duckDb","maxRunningQueries":"007","healthCheckQuery":"inf","initSql":["SELECT 1.5"]})");
  EXPECT_EQ(f.groups[0].second, R"({"members":["d"],"maxQueuedQueries":12})");
}
