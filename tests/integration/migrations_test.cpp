// The embedded migrations against the real PostgreSQL the test command
// starts (QF_PG_URL): each test gets a database of its own.
#include "actors/control/migrator.hpp"
#include "migrations/embedded.hpp"
#include "tests/integration/fresh_database.hpp"

#include <thread>

using namespace qf;

namespace {

using migrations_test = test_support::fresh_database;

} // namespace

TEST(embedded_migrations, run_from_v1_to_v23_without_gaps) {
  const auto& all = migrations::all();
  ASSERT_EQ(all.size(), 23u);
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].version, static_cast<int>(i + 1));
    EXPECT_FALSE(all[i].sql.empty());
  }
  EXPECT_EQ(migrator::latest_version(), 23);
}

TEST_F(migrations_test, an_empty_database_is_migrated_to_the_latest_version) {
  EXPECT_EQ(migrator::check(url).version, 0);
  auto r = migrator::migrate(url);
  ASSERT_EQ(r.applied.size(), 23u);
  EXPECT_EQ(r.applied.front(), 1);
  EXPECT_EQ(r.applied.back(), 23);
  EXPECT_EQ(r.version, 23);
  EXPECT_EQ(query("SELECT count(*) FROM queryflux_schema_history")[0][0].as<int>(), 23);
  // The worker migrations of the spec.
  EXPECT_EQ(query("SELECT count(*) FROM information_schema.columns WHERE table_name = "
                  "'worker_registry' AND column_name = 'status'")[0][0].as<int>(),
            1);
  EXPECT_EQ(query("SELECT indexdef FROM pg_indexes WHERE indexname = 'query_records_worker'")[0][0]
              .as<std::string>(),
            "CREATE INDEX query_records_worker ON public.query_records USING btree (worker, "
            "created_at DESC) WHERE (worker IS NOT NULL)");
  // History writes are idempotent on the proxy query id.
  query("INSERT INTO query_records (proxy_query_id, frontend_protocol, status) "
        "VALUES ('q1', 'trinoHttp', 'Success') ON CONFLICT (proxy_query_id) DO NOTHING");
  query("INSERT INTO query_records (proxy_query_id, frontend_protocol, status) "
        "VALUES ('q1', 'trinoHttp', 'Failed') ON CONFLICT (proxy_query_id) DO NOTHING");
  EXPECT_EQ(query("SELECT status FROM query_records")[0][0].as<std::string>(), "Success");
  EXPECT_EQ(migrator::check(url).version, 23);
}

TEST_F(migrations_test, running_again_applies_nothing) {
  migrator::migrate(url);
  auto again = migrator::migrate(url);
  EXPECT_TRUE(again.applied.empty());
  EXPECT_EQ(again.version, 23);
}

TEST_F(migrations_test, two_processes_migrating_at_once_apply_each_version_once) {
  std::vector<int> a, b;
  std::thread other{[&] { a = migrator::migrate(url).applied; }};
  b = migrator::migrate(url).applied;
  other.join();
  EXPECT_EQ(a.size() + b.size(), 23u); // the advisory lock serialised them
  EXPECT_EQ(query("SELECT count(*) FROM queryflux_schema_history")[0][0].as<int>(), 23);
}

TEST_F(migrations_test, migrating_in_steps_reaches_the_same_schema) {
  auto first = migrator::migrate(url, 17);
  EXPECT_EQ(first.version, 17);
  EXPECT_EQ(migrator::check(url).version, 17);
  auto rest = migrator::migrate(url);
  EXPECT_EQ(rest.applied, (std::vector<int>{18, 19, 20, 21, 22, 23}));
}

TEST_F(migrations_test, v19_succeeds_when_the_worker_index_was_created_by_hand) {
  migrator::migrate(url, 18);
  // As the upgrade notes advise, outside any transaction.
  {
    pqxx::connection c{url};
    pqxx::nontransaction tx{c};
    tx.exec("ALTER TABLE query_records ADD COLUMN worker TEXT");
    tx.exec("CREATE INDEX CONCURRENTLY IF NOT EXISTS query_records_worker ON query_records "
            "(worker, created_at DESC) WHERE worker IS NOT NULL");
    tx.commit();
  }
  auto r = migrator::migrate(url);
  EXPECT_EQ(r.applied, (std::vector<int>{19, 20, 21, 22, 23}));
  EXPECT_EQ(query("SELECT count(*) FROM pg_indexes WHERE indexname = 'query_records_worker'")[0][0]
              .as<int>(),
            1);
}

TEST_F(migrations_test, a_database_newer_than_the_binary_is_refused_untouched) {
  migrator::migrate(url);
  query("INSERT INTO queryflux_schema_history (version, name, checksum) "
        "VALUES (24, 'from_the_future', 'x')");
  for (auto attempt : {0, 1}) {
    try {
      if (attempt == 0)
        migrator::migrate(url);
      else
        migrator::check(url);
      FAIL() << "expected a refusal";
    } catch (const migrator::migration_error& e) {
      EXPECT_NE(std::string{e.what()}.find("the database is at migration V24, newer than this "
                                           "QueryFlux knows (V23)"),
                std::string::npos)
        << e.what();
    }
  }
  EXPECT_EQ(query("SELECT count(*) FROM queryflux_schema_history")[0][0].as<int>(), 24);
}

TEST_F(migrations_test, an_altered_migration_is_refused) {
  migrator::migrate(url, 3);
  query("UPDATE queryflux_schema_history SET checksum = 'edited' WHERE version = 2");
  EXPECT_THROW(migrator::migrate(url), migrator::migration_error);
  EXPECT_THROW(migrator::check(url), migrator::migration_error);
  EXPECT_EQ(query("SELECT max(version) FROM queryflux_schema_history")[0][0].as<int>(), 3);
}

TEST(migrations_unreachable, a_database_that_cannot_be_reached_is_a_clear_error) {
  try {
    migrator::migrate("postgres://postgres@127.0.0.1:1/nothing?connect_timeout=2");
    FAIL() << "expected an error";
  } catch (const migrator::migration_error& e) {
    EXPECT_NE(std::string{e.what()}.find("cannot reach the database"), std::string::npos);
  }
}
