// The embedded engines against real DuckDB and SQLite databases: types,
// NULLs, unicode, large results in batches, errors and interrupts.
#include "engines/engine.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <future>
#include <thread>

using namespace qf;
using namespace qf::engines;

namespace {

config::cluster cluster_of(config::engine_kind kind, std::string path = {}) {
  config::cluster c;
  c.name = "test";
  c.engine = kind;
  c.database_path = std::move(path);
  return c;
}

struct result {
  std::vector<column> columns;
  row_batch rows;
};

result run(connection& conn, const std::string& sql) {
  auto cur = conn.execute(sql);
  result out{cur->columns(), {}};
  while (cur->fetch(out.rows, 1000)) {
    // keep fetching
  }
  out.rows.width = out.columns.size();
  return out;
}

class engine_test : public ::testing::TestWithParam<config::engine_kind> {
protected:
  std::shared_ptr<database> db = open_database(cluster_of(GetParam()));
  std::unique_ptr<connection> conn = db->connect();
};

} // namespace

TEST_P(engine_test, nulls_unicode_and_basic_types) {
  auto r = run(*conn, "SELECT 42 AS i, 'héllo 日本 🚀' AS s, NULL AS n, "
                      "1.5 AS d");
  ASSERT_EQ(r.columns.size(), 4u);
  EXPECT_EQ(r.columns[0].name, "i");
  ASSERT_EQ(r.rows.rows(), 1u);
  EXPECT_EQ(r.rows.at(0, 0), "42");
  EXPECT_EQ(r.rows.at(0, 1), "héllo 日本 🚀");
  EXPECT_FALSE(r.rows.at(0, 2));
  EXPECT_EQ(r.columns[1].type.id, type_id::varchar);
}

TEST_P(engine_test, a_hundred_thousand_rows_arrive_in_batches) {
  auto sql = GetParam() == config::engine_kind::duck_db
               ? "SELECT i FROM range(0, 100000) t(i)"
               : "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 "
                 "FROM c WHERE i < 99999) SELECT i FROM c";
  auto cur = conn->execute(sql);
  size_t total = 0;
  size_t batches = 0;
  int64_t expected = 0;
  bool more = true;
  while (more) {
    row_batch b;
    more = cur->fetch(b, 4096);
    ASSERT_LE(b.rows(), 4096u);
    for (size_t r = 0; r < b.rows(); ++r)
      ASSERT_EQ(b.at(r, 0), std::to_string(expected++));
    total += b.rows();
    ++batches;
  }
  EXPECT_EQ(total, 100000u);
  EXPECT_GE(batches, 25u);
}

TEST_P(engine_test, rejected_sql_is_an_engine_error) {
  try {
    run(*conn, "SELEC nonsense");
    FAIL() << "no error";
  } catch (const engine_error& e) {
    EXPECT_EQ(e.kind(), error_kind::syntax) << e.what();
  }
  try {
    run(*conn, "SELECT * FROM missing_table");
    FAIL() << "no error";
  } catch (const engine_error& e) {
    EXPECT_EQ(e.kind(), error_kind::user) << e.what();
    EXPECT_NE(std::string{e.what()}.find("missing_table"), std::string::npos);
  }
  // The connection still works afterwards.
  EXPECT_EQ(run(*conn, "SELECT 7").rows.at(0, 0), "7");
}

TEST_P(engine_test, empty_sql_is_an_error) {
  EXPECT_THROW(run(*conn, "   "), engine_error);
}

TEST_P(engine_test, several_statements_stream_the_last_one) {
  auto r = run(*conn, "CREATE TABLE t(x INTEGER); INSERT INTO t VALUES (1), "
                      "(2); SELECT sum(x) AS s FROM t");
  ASSERT_EQ(r.rows.rows(), 1u);
  EXPECT_EQ(r.rows.at(0, 0), "3");
}

TEST_P(engine_test, in_memory_database_is_shared_by_connections) {
  run(*conn, "CREATE TABLE shared_t AS SELECT 5 AS v");
  auto other = db->connect();
  EXPECT_EQ(run(*other, "SELECT v FROM shared_t").rows.at(0, 0), "5");
}

TEST_P(engine_test, interrupt_stops_a_sleeping_statement) {
  auto started = std::chrono::steady_clock::now();
  auto done = std::async(std::launch::async, [&] {
    try {
      run(*conn, "SELECT sleep_ms(20000)");
      return error_kind::internal;
    } catch (const engine_error& e) {
      return e.kind();
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  conn->interrupt();
  EXPECT_EQ(done.get(), error_kind::cancelled);
  EXPECT_LT(std::chrono::steady_clock::now() - started,
            std::chrono::seconds(10));
  EXPECT_EQ(run(*conn, "SELECT 1").rows.at(0, 0), "1");
}

TEST_P(engine_test, init_sql_runs_once_when_the_database_opens) {
  auto cfg = cluster_of(GetParam());
  cfg.init_sql = {"CREATE TABLE demo AS SELECT 1 AS x",
                  "INSERT INTO demo VALUES (2)"};
  auto seeded = open_database(cfg);
  auto c = seeded->connect();
  EXPECT_EQ(run(*c, "SELECT count(*) FROM demo").rows.at(0, 0), "2");
}

TEST_P(engine_test, a_session_a_client_left_state_in_is_renewed_once_no_transaction_holds_it) {
  // run() is the connection actor's: the next statement may be another
  // client's, who must not find the last one's temporary table.
  auto rows_of = [&](const std::string& sql) {
    auto cur = conn->run(sql, {});
    row_batch rows;
    while (cur->fetch(rows, 100)) {
      // keep fetching
    }
    return rows.cells;
  };
  rows_of("CREATE TEMP TABLE mine AS SELECT 1 AS x");
  EXPECT_THROW(rows_of("SELECT x FROM mine"), engine_error);
  // Inside a transaction it stays, to the transaction's end.
  rows_of("BEGIN");
  rows_of("CREATE TEMP TABLE mine AS SELECT 2 AS x");
  EXPECT_EQ(rows_of("SELECT x FROM mine"), std::vector<std::optional<std::string>>{"2"});
  rows_of("COMMIT");
  EXPECT_THROW(rows_of("SELECT x FROM mine"), engine_error);
  // execute() alone (initSql's, the health check's) renews nothing.
  run(*conn, "CREATE TEMP TABLE kept AS SELECT 3 AS x");
  EXPECT_EQ(run(*conn, "SELECT x FROM kept").rows.at(0, 0), "3");
}

INSTANTIATE_TEST_SUITE_P(embedded, engine_test,
                         ::testing::Values(config::engine_kind::duck_db,
                                           config::engine_kind::sqlite),
                         [](const auto& param_info) {
                           return std::string{config::to_string(param_info.param)};
                         });

TEST(duckdb_engine, maps_types_to_trino_types_and_text) {
  auto db = open_database(cluster_of(config::engine_kind::duck_db));
  auto conn = db->connect();
  auto r = run(*conn, R"(SELECT true AS b, 7::TINYINT AS ti, 300::SMALLINT AS si,
    70000::INTEGER AS i, 9000000000::BIGINT AS bi, 1.25::REAL AS r,
    2.5::DOUBLE AS d, 12345.678::DECIMAL(10,3) AS dec, -0.05::DECIMAL(4,2) AS neg,
    123456789012345678901234567890::HUGEINT AS h, 'text' AS v,
    '\xAA\xBB'::BLOB AS bl, DATE '2024-02-29' AS dt, TIME '13:14:15' AS tm,
    TIMESTAMP '2024-02-29 13:14:15.123456' AS ts,
    TIMESTAMPTZ '2024-02-29 13:14:15+00' AS tz,
    '6ba7b810-9dad-11d1-80b4-00c04fd430c8'::UUID AS u,
    INTERVAL 3 DAY AS iv, 'nan'::DOUBLE AS nan, NULL::INTEGER AS ni)");
  ASSERT_EQ(r.rows.rows(), 1u);
  auto type = [&](size_t i) { return r.columns[i].type; };
  EXPECT_EQ(type(0).id, type_id::boolean);
  EXPECT_EQ(type(1).id, type_id::tinyint);
  EXPECT_EQ(type(2).id, type_id::smallint);
  EXPECT_EQ(type(3).id, type_id::integer);
  EXPECT_EQ(type(4).id, type_id::bigint);
  EXPECT_EQ(type(5).id, type_id::real);
  EXPECT_EQ(type(6).id, type_id::double_precision);
  EXPECT_EQ(type(7), (sql_type{type_id::decimal, 10, 3}));
  EXPECT_EQ(type(9), (sql_type{type_id::decimal, 38, 0}));
  EXPECT_EQ(type(11).id, type_id::varbinary);
  EXPECT_EQ(type(12).id, type_id::date);
  EXPECT_EQ(type(14), (sql_type{type_id::timestamp, 6}));
  EXPECT_EQ(type(15).id, type_id::timestamp_tz);
  EXPECT_EQ(type(16).id, type_id::uuid);
  std::vector<std::string> expected{
    "true", "7", "300", "70000", "9000000000", "1.25", "2.5", "12345.678",
    "-0.05", "123456789012345678901234567890", "text", "\xAA\xBB",
    "2024-02-29", "13:14:15.000000", "2024-02-29 13:14:15.123456",
    "2024-02-29 13:14:15.000000", "6ba7b810-9dad-11d1-80b4-00c04fd430c8",
    "3 days", "NaN"};
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_EQ(r.rows.at(0, i), expected[i]) << r.columns[i].name;
  EXPECT_FALSE(r.rows.at(0, 19));
}

TEST(sqlite_engine, declared_types_decide_column_types) {
  auto db = open_database(cluster_of(config::engine_kind::sqlite));
  auto conn = db->connect();
  run(*conn, "CREATE TABLE t(i INTEGER, r REAL, s TEXT, b BLOB, f BOOLEAN)");
  run(*conn, "INSERT INTO t VALUES (1, 2.5, 'x', x'00ff', 1), "
             "(NULL, NULL, NULL, NULL, 0)");
  auto r = run(*conn, "SELECT * FROM t");
  EXPECT_EQ(r.columns[0].type.id, type_id::bigint);
  EXPECT_EQ(r.columns[1].type.id, type_id::double_precision);
  EXPECT_EQ(r.columns[2].type.id, type_id::varchar);
  EXPECT_EQ(r.columns[3].type.id, type_id::varbinary);
  EXPECT_EQ(r.columns[4].type.id, type_id::boolean);
  EXPECT_EQ(r.rows.at(0, 3), std::string("\x00\xff", 2));
  EXPECT_EQ(r.rows.at(0, 4), "true");
  EXPECT_EQ(r.rows.at(1, 4), "false");
  for (size_t c = 0; c < 4; ++c)
    EXPECT_FALSE(r.rows.at(1, c));
}

TEST(sqlite_engine, file_databases_persist) {
  auto path = std::filesystem::temp_directory_path()
              / ("qf-sqlite-" + std::to_string(::getpid()) + ".db");
  std::filesystem::remove(path);
  {
    auto db = open_database(cluster_of(config::engine_kind::sqlite,
                                       path.string()));
    auto c = db->connect();
    run(*c, "CREATE TABLE kept AS SELECT 9 AS v");
  }
  auto db = open_database(cluster_of(config::engine_kind::sqlite,
                                     path.string()));
  auto c = db->connect();
  EXPECT_EQ(run(*c, "SELECT v FROM kept").rows.at(0, 0), "9");
  std::filesystem::remove(path);
}

TEST(duckdb_engine, unopenable_path_is_an_engine_error) {
  EXPECT_THROW(open_database(cluster_of(config::engine_kind::duck_db,
                                        "/nonexistent/dir/x.duckdb")),
               engine_error);
}
