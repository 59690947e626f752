// The fleet config in a migrated database of the real PostgreSQL server.
#include "actors/control/fleet_tables.hpp"
#include "actors/control/database_url.hpp"
#include "actors/control/migrator.hpp"
#include "tests/integration/fresh_database.hpp"

using namespace qf;

namespace {

class fleet_tables_test : public test_support::fresh_database {
protected:
  void SetUp() override {
    fresh_database::SetUp();
    migrator::migrate(url);
  }
};

config::fleet sample() {
  return config::fleet_of(R"(
clusters:
  duck: { engine: duckDb, maxRunningQueries: 3 }
  off: { engine: sqlite, enabled: false }
clusterGroups:
  bi: { members: [duck, off], maxQueuedQueries: 7, strategy: { type: failover } }
routers:
  - { type: header, headerName: x-team, headerValueToGroup: { a: bi } }
  - { type: userGroup, userToGroup: { bob: bi } }
routingFallback: bi
)");
}

} // namespace

TEST_F(fleet_tables_test, a_fresh_database_has_no_fleet_until_seeded_once) {
  EXPECT_FALSE(fleet_tables::load(url));
  EXPECT_TRUE(fleet_tables::seed(url, sample()));
  auto other = config::fleet_of("clusters: { x: { engine: duckDb } }\nclusterGroups: { g: { members: [x] } }\n");
  EXPECT_FALSE(fleet_tables::seed(url, other)) << "the database keeps the first fleet";
  auto stored = fleet_tables::load(url);
  ASSERT_TRUE(stored);
  auto original = sample();
  ASSERT_EQ(stored->clusters.size(), 2u);
  EXPECT_EQ(stored->clusters[0].first, "duck");
  EXPECT_EQ(stored->groups[0].first, "bi");
  ASSERT_EQ(stored->routers.size(), 2u);
  EXPECT_EQ(stored->routing_fallback, "bi");
  // The structured columns mirror the stored documents.
  auto row = query("SELECT engine, enabled, max_running_queries FROM cluster_configs WHERE name = 'off'");
  EXPECT_EQ(row[0][0].as<std::string>(), "sqlite");
  EXPECT_FALSE(row[0][1].as<bool>());
  EXPECT_TRUE(row[0][2].is_null());
  auto group = query("SELECT members, max_queued_queries, strategy->>'type' FROM cluster_group_configs");
  EXPECT_EQ(group[0][0].as<std::string>(), "{duck,off}");
  EXPECT_EQ(group[0][1].as<int>(), 7);
  EXPECT_EQ(group[0][2].as<std::string>(), "failover");
  EXPECT_EQ(query("SELECT revision FROM config_revision")[0][0].as<int>(), 1);
  // Loaded back, it validates into the same config the file would give.
  auto merged = config::load_with_fleet("queryflux: {}\n", *stored);
  ASSERT_TRUE(merged.config) << merged.problems.front();
  auto from_file = config::load_with_fleet("queryflux: {}\n", original);
  ASSERT_TRUE(from_file.config);
  EXPECT_EQ(merged.config->clusters.size(), from_file.config->clusters.size());
  EXPECT_EQ(merged.config->groups[0].max_queued_queries, 7u);
  EXPECT_EQ(merged.config->routers.size(), 2u);
}

TEST(database_url, timeouts_are_added_unless_the_operator_set_them) {
  EXPECT_EQ(with_timeouts("postgres://u@h/db"),
            "postgres://u@h/db?connect_timeout=10&options=-c%20statement_timeout%3D60000");
  EXPECT_EQ(with_timeouts("postgres://u@h/db?sslmode=require&connect_timeout=3", 0),
            "postgres://u@h/db?sslmode=require&connect_timeout=3");
}

TEST_F(fleet_tables_test, control_plane_connections_carry_a_statement_timeout) {
  pqxx::connection c{with_timeouts(url)};
  pqxx::nontransaction tx{c};
  EXPECT_EQ(tx.exec1("SHOW statement_timeout")[0].as<std::string>(), "1min");
}
