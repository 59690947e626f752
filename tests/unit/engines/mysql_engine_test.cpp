// The MySQL engine against the real MariaDB server the test command starts
// (QF_MY_URL): types, NULLs, unicode, parameters, streaming, KILL QUERY.
#include "engines/mysql_engine.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <future>
#include <thread>

using namespace qf;
using namespace qf::engines;

namespace {

std::string server_url() {
  auto* url = std::getenv("QF_MY_URL");
  return url ? url : "mysql://qf:qf@127.0.0.1:13306/qftest";
}

std::shared_ptr<database> open_server() {
  config::cluster c;
  c.name = "mariadb";
  c.engine = config::engine_kind::mysql;
  c.endpoint = server_url();
  return open_database(c);
}

struct result {
  std::vector<column> columns;
  row_batch rows;
  int64_t affected = -1;
};

result run(connection& conn, const std::string& sql, const parameters& params = {}) {
  auto cur = conn.run(sql, params);
  result out{cur->columns(), {}, cur->affected_rows()};
  while (cur->fetch(out.rows, 1000)) {
    // keep fetching
  }
  out.rows.width = out.columns.size();
  return out;
}

class mysql_engine : public ::testing::Test {
protected:
  std::shared_ptr<database> db = open_server();
  std::unique_ptr<connection> conn = db->connect();
};

} // namespace

TEST(mysql_url, parses_every_part_and_decodes_them) {
  auto t = parse_mysql_url("mysql://us%40er:p%3Ass@db.example:3307/sales?ssl=1");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->user, "us@er");
  EXPECT_EQ(t->password, "p:ss");
  EXPECT_EQ(t->host, "db.example");
  EXPECT_EQ(t->port, 3307u);
  EXPECT_EQ(t->database, "sales");
  auto bare = parse_mysql_url("mysql://localhost");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->port, 0u);
  EXPECT_FALSE(parse_mysql_url("postgres://localhost"));
  EXPECT_FALSE(parse_mysql_url("mysql://host:99999"));
  EXPECT_FALSE(parse_mysql_url("mysql://"));
}

TEST_F(mysql_engine, types_nulls_and_unicode) {
  // In a transaction: a temporary table outside one lasts a statement
  // (a_temporary_table_goes_with_the_connection below).
  run(*conn, "START TRANSACTION");
  run(*conn, "CREATE TEMPORARY TABLE typed (i BIGINT, s VARCHAR(40), n INT, "
             "d DECIMAL(10,2), day DATE, ts DATETIME(3), f DOUBLE, b VARBINARY(4), "
             "u BIGINT UNSIGNED)");
  run(*conn, "INSERT INTO typed VALUES (42, 'héllo 日本 🚀', NULL, 1.5, '2024-02-29', "
             "'2024-02-29 13:14:15.5', 2.5, X'00FF', 18446744073709551615)");
  auto r = run(*conn, "SELECT * FROM typed");
  ASSERT_EQ(r.rows.rows(), 1u);
  EXPECT_EQ(r.columns[0].type.id, type_id::bigint);
  EXPECT_EQ(r.rows.at(0, 0), "42");
  EXPECT_EQ(r.columns[1].type.id, type_id::varchar);
  EXPECT_EQ(r.rows.at(0, 1), "héllo 日本 🚀");
  EXPECT_FALSE(r.rows.at(0, 2));
  EXPECT_EQ(r.columns[3].type, (sql_type{type_id::decimal, 10, 2}));
  EXPECT_EQ(r.rows.at(0, 3), "1.50");
  EXPECT_EQ(r.columns[4].type.id, type_id::date);
  EXPECT_EQ(r.rows.at(0, 4), "2024-02-29");
  EXPECT_EQ(r.columns[5].type, (sql_type{type_id::timestamp, 3}));
  EXPECT_EQ(r.rows.at(0, 5), "2024-02-29 13:14:15.500");
  EXPECT_EQ(r.columns[6].type.id, type_id::double_precision);
  EXPECT_EQ(r.columns[7].type.id, type_id::varbinary);
  EXPECT_EQ(r.rows.at(0, 7), std::string("\x00\xff", 2));
  EXPECT_EQ(r.columns[8].type, (sql_type{type_id::decimal, 20, 0}));
  EXPECT_EQ(r.rows.at(0, 8), "18446744073709551615");
}

TEST_F(mysql_engine, a_temporary_table_goes_with_the_connection_once_no_transaction_holds_it) {
  // The connection serves whoever its actor serves next.
  run(*conn, "START TRANSACTION");
  run(*conn, "CREATE TEMPORARY TABLE mine (x INT)");
  run(*conn, "INSERT INTO mine VALUES (1)");
  EXPECT_EQ(run(*conn, "SELECT count(*) FROM mine").rows.at(0, 0), "1");
  run(*conn, "COMMIT");
  EXPECT_THROW(run(*conn, "SELECT count(*) FROM mine"), engine_error);
  EXPECT_EQ(run(*conn, "SELECT 1").rows.at(0, 0), "1");
}

TEST_F(mysql_engine, parameters_become_escaped_literals) {
  auto r = run(*conn, "SELECT $1 AS a, $2 AS b, $3 AS c, '$1' AS d LIMIT $4",
               {"it's a \\ \"test\"", std::nullopt, "-17", "5"});
  ASSERT_EQ(r.rows.rows(), 1u);
  EXPECT_EQ(r.rows.at(0, 0), "it's a \\ \"test\"");
  EXPECT_FALSE(r.rows.at(0, 1));
  EXPECT_EQ(r.rows.at(0, 2), "-17");
  EXPECT_EQ(r.rows.at(0, 3), "$1");
  EXPECT_THROW(run(*conn, "SELECT $2", {"x"}), engine_error);
}

TEST_F(mysql_engine, writes_report_affected_rows) {
  run(*conn, "DROP TABLE IF EXISTS engine_writes");
  run(*conn, "CREATE TABLE engine_writes (id INT PRIMARY KEY, v VARCHAR(10))");
  EXPECT_EQ(run(*conn, "INSERT INTO engine_writes VALUES (1,'a'),(2,'b'),(3,'c')").affected, 3);
  auto r = run(*conn, "UPDATE engine_writes SET v = 'z' WHERE id >= 2");
  EXPECT_EQ(r.affected, 2);
  EXPECT_TRUE(r.columns.empty());
  run(*conn, "DROP TABLE engine_writes");
}

TEST_F(mysql_engine, a_hundred_thousand_rows_arrive_in_batches) {
  auto cur = conn->execute(
"SELECT seq FROM seq_1_to_100000",
    {});
  row_batch batch;
  size_t total = 0;
  size_t batches = 0;
  bool more = true;
  while (more) {
    batch.cells.clear();
    more = cur->fetch(batch, 4096);
    EXPECT_LE(batch.rows(), 4096u);
    total += batch.rows();
    ++batches;
  }
  EXPECT_EQ(total, 100000u);
  EXPECT_GE(batches, 25u);
}

TEST_F(mysql_engine, an_abandoned_cursor_leaves_the_connection_usable) {
  {
    auto cur = conn->execute(
"SELECT seq FROM seq_1_to_1000000",
      {});
    row_batch batch;
    cur->fetch(batch, 10);
  }
  EXPECT_EQ(run(*conn, "SELECT 1").rows.at(0, 0), "1");
}

TEST_F(mysql_engine, errors_carry_the_server_sqlstate) {
  try {
    run(*conn, "SELECT * FROM no_such_table");
    FAIL() << "expected an error";
  } catch (const engine_error& e) {
    EXPECT_EQ(e.kind(), error_kind::user);
    EXPECT_EQ(e.sqlstate(), "42S02");
  }
  try {
    run(*conn, "SELEC 1");
    FAIL() << "expected an error";
  } catch (const engine_error& e) {
    EXPECT_EQ(e.kind(), error_kind::syntax);
  }
  EXPECT_EQ(run(*conn, "SELECT 2").rows.at(0, 0), "2");
}

TEST_F(mysql_engine, interrupt_kills_the_running_query) {
  run(*conn, "SELECT 1"); // connected, so the kill knows its thread id
  auto started = std::chrono::steady_clock::now();
  auto done = std::async(std::launch::async, [&] {
    try {
      run(*conn, "SELECT SLEEP(20)");
      return error_kind::internal;
    } catch (const engine_error& e) {
      return e.kind();
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  conn->interrupt();
  EXPECT_EQ(done.get(), error_kind::cancelled);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
  EXPECT_EQ(run(*conn, "SELECT 1").rows.at(0, 0), "1");
}

TEST(mysql_engine_down, an_unreachable_server_is_an_engine_error) {
  config::cluster c;
  c.engine = config::engine_kind::mysql;
  c.endpoint = "mysql://qf:qf@127.0.0.1:1/qftest";
  auto conn = open_database(c)->connect();
  try {
    conn->execute("SELECT 1", {});
    FAIL() << "expected an error";
  } catch (const engine_error& e) {
    EXPECT_EQ(e.kind(), error_kind::internal);
    EXPECT_NE(std::string(e.what()).find("cannot connect"), std::string::npos);
  }
}
