// The fast lane's libpq path (run()), which the e2e tests reach no more
// now that Execute is relayed: used for a Describe without Execute and
// for servers reached over TLS. Against the real PostgreSQL the test
// command starts (QF_PG_URL), on a real event loop.
#include "engines/pg_async_connection.hpp"

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <thread>

using namespace qf;
using namespace qf::engines;
using namespace std::chrono_literals;

namespace {

std::string server_url() {
  auto* url = std::getenv("QF_PG_URL");
  return url ? url : "postgres://postgres@127.0.0.1:15432/postgres";
}

/// Collects a run; pauses once after the first rows, resumed from the loop.
struct collector : pg_async_listener, std::enable_shared_from_this<collector> {
  std::shared_ptr<pg_async_connection> conn;
  std::vector<column> columns;
  std::vector<std::string> first_cells;
  int64_t rows = 0;
  int64_t affected = -1;
  std::string error_code;
  bool paused_once = false;
  std::promise<void> done;

  void on_columns(std::vector<column> cols) override {
    columns = std::move(cols);
  }
  bool on_rows(row_batch& batch) override {
    for (size_t r = 0; r < batch.rows(); ++r) {
      auto& cell = batch.cells[r * batch.width];
      first_cells.push_back(cell ? *cell : "NULL");
    }
    rows += static_cast<int64_t>(batch.rows());
    if (paused_once)
      return true;
    paused_once = true;
    conn_loop->post([self = shared_from_this()] { self->conn->resume(); });
    return false;
  }
  void on_done(int64_t n) override {
    affected = n;
    done.set_value();
  }
  void on_failed(const engine_error& e) override {
    error_code = e.sqlstate();
    done.set_value();
  }
  bool on_relayed(std::string_view) override {
    ADD_FAILURE() << "run() does not relay";
    return true;
  }
  void on_relay_done(int64_t, const engine_error*) override {
    ADD_FAILURE() << "run() does not relay";
  }
  io::event_loop* conn_loop = nullptr;
};

class pg_async_connection_test : public ::testing::Test {
protected:
  void SetUp() override {
    loop_ = io::event_loop::create();
    loop_->start();
  }
  void TearDown() override {
    loop_->post([c = std::move(conn_)] {}); // closed on its loop
    loop_->stop();
  }

  std::shared_ptr<pg_async_connection> open() {
    std::promise<std::shared_ptr<pg_async_connection>> opened;
    loop_->post([&] {
      pg_async_connection::open(server_url(), *loop_,
                                [&](std::shared_ptr<pg_async_connection> c, std::string why) {
                                  EXPECT_TRUE(c) << why;
                                  opened.set_value(std::move(c));
                                });
    });
    auto f = opened.get_future();
    EXPECT_EQ(f.wait_for(10s), std::future_status::ready);
    return f.get();
  }

  /// Runs sql on the loop and waits for its end.
  std::shared_ptr<collector> run(const std::string& sql, parameters params) {
    auto c = std::make_shared<collector>();
    c->conn = conn_;
    c->conn_loop = loop_.get();
    auto finished = c->done.get_future();
    loop_->post([&, c] { conn_->run(sql, params, c); });
    EXPECT_EQ(finished.wait_for(30s), std::future_status::ready) << sql;
    return c;
  }

  std::shared_ptr<io::event_loop> loop_;
  std::shared_ptr<pg_async_connection> conn_;
};

} // namespace

TEST_F(pg_async_connection_test, streams_a_parameterized_result_in_order_through_a_pause) {
  conn_ = open();
  ASSERT_TRUE(conn_);
  auto c = run("SELECT g, NULLIF(g % 3, 0) AS m FROM generate_series(1, $1::int) g", {"20000"});
  EXPECT_EQ(c->error_code, "");
  ASSERT_EQ(c->columns.size(), 2u);
  EXPECT_EQ(c->columns[0].name, "g");
  EXPECT_EQ(c->rows, 20000);
  ASSERT_EQ(c->first_cells.size(), 20000u);
  for (size_t i = 0; i < c->first_cells.size(); ++i)
    ASSERT_EQ(c->first_cells[i], std::to_string(i + 1)) << "row " << i;
  EXPECT_TRUE(c->paused_once);
  EXPECT_TRUE(conn_->reusable());

  auto again = run("SELECT $1::text AS t", {std::nullopt});
  EXPECT_EQ(again->first_cells, std::vector<std::string>{"NULL"});
}

TEST_F(pg_async_connection_test, a_server_error_keeps_its_sqlstate_and_the_connection) {
  conn_ = open();
  ASSERT_TRUE(conn_);
  auto c = run("SELECT * FROM no_such_table_here WHERE 1 = $1::int", {"1"});
  EXPECT_EQ(c->error_code, "42P01");
  EXPECT_EQ(run("SELECT 1 + $1::int", {"1"})->first_cells, std::vector<std::string>{"2"});
}

TEST_F(pg_async_connection_test, a_backend_terminated_mid_statement_fails_it_with_08006) {
  conn_ = open();
  ASSERT_TRUE(conn_);
  auto c = std::make_shared<collector>();
  c->conn = conn_;
  c->conn_loop = loop_.get();
  auto finished = c->done.get_future();
  loop_->post([&, c] { conn_->run("SELECT pg_sleep($1::int) AS slept", {"20"}, c); });

  PGconn* admin = PQconnectdb(server_url().c_str());
  ASSERT_EQ(PQstatus(admin), CONNECTION_OK);
  bool terminated = false;
  for (int i = 0; i < 100 && !terminated; ++i) {
    PGresult* res = PQexec(admin, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                  "WHERE query = 'SELECT pg_sleep($1::int) AS slept' "
                                  "AND state = 'active'");
    terminated = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1;
    PQclear(res);
    if (!terminated)
      std::this_thread::sleep_for(50ms);
  }
  PQfinish(admin);
  ASSERT_TRUE(terminated);
  ASSERT_EQ(finished.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(c->error_code, "08006");
  EXPECT_FALSE(conn_->reusable());
}
