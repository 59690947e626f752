// The fast lane's libpq path (run()), which the e2e tests reach no more
// now that Execute is relayed: used for a Describe without Execute and
// for servers reached over TLS; and what a relay keeps prepared on the
// server for clients' named statements. Against the real PostgreSQL the test
// command starts (QF_PG_URL), on a real event loop.
#include "engines/lane_pool.hpp"
#include "engines/pg_async_connection.hpp"
#include "protocols/pgwire/frontend.hpp"
#include "tests/unit/support/fetch_from_pool.hpp"
#include "tests/unit/support/pg_connection.hpp"
#include "tests/unit/support/relay_collector.hpp"
#include "tests/unit/support/silent_listener.hpp"

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <thread>

using namespace qf;
using namespace qf::engines;
using qf::test_support::relay_collector;
using namespace std::chrono_literals;

namespace {

std::string server_url() {
  return qf::test_support::pg_server_url();
}

/// Collects a run; pauses once after the first rows, resumed from the loop.
struct collector : pg_async_listener, std::enable_shared_from_this<collector> {
  std::shared_ptr<pg_async_connection> conn;
  std::vector<std::string> notices; // "SEVERITY SQLSTATE message"
  std::vector<column> columns;
  std::vector<std::string> first_cells;
  int64_t rows = 0;
  int64_t affected = -1;
  std::string error_code;
  bool paused_once = false;
  std::promise<void> done;

  void on_notice(const notice& n) override {
    notices.push_back(n.severity + " " + n.sqlstate + " " + n.message);
  }
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
    return open_on(*loop_);
  }

  static std::shared_ptr<pg_async_connection> open_on(io::event_loop& loop) {
    return qf::test_support::open_pg_connection(loop);
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

  /// Relays a simple Query, or with `prepared` set (a client's named
  /// statement) an Execute, and waits for its end.
  std::shared_ptr<relay_collector> relay(const std::string& sql, parameters params = {},
                                         bool prepared = false) {
    auto c = std::make_shared<relay_collector>();
    auto finished = c->finished;
    loop_->post([&, c] {
      if (params.empty() && !prepared)
        conn_->relay(sql, c);
      else
        conn_->relay_extended(sql, params, {}, {}, false, prepared, c);
    });
    EXPECT_EQ(finished.wait_for(30s), std::future_status::ready) << sql;
    return c;
  }
  std::shared_ptr<relay_collector> relay_named(const std::string& sql, parameters params) {
    return relay(sql, std::move(params), true);
  }

  /// What the connection's server session holds prepared, by name.
  std::string server_prepared() {
    return relay("SELECT coalesce(string_agg(name || '=' || statement, ';' ORDER BY name), '') "
                 "FROM pg_prepared_statements")
      ->first_cell();
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

TEST_F(pg_async_connection_test, a_named_statement_is_prepared_on_the_server_once) {
  conn_ = open();
  ASSERT_TRUE(conn_);
  const std::string sql = "SELECT $1::int * 2";
  auto first = relay_named(sql, {"21"});
  EXPECT_EQ(first->error_code, "");
  EXPECT_EQ(first->first_cell(), "42");
  auto second = relay_named(sql, {"5"});
  EXPECT_EQ(second->first_cell(), "10");
  EXPECT_EQ(server_prepared(), "qf_s1=" + sql);
  // An unnamed one stays unnamed: planned afresh, as the client asked.
  EXPECT_EQ(relay("SELECT $1::int + 1", {"1"})->first_cell(), "2");
  EXPECT_EQ(server_prepared(), "qf_s1=" + sql);
  EXPECT_TRUE(conn_->reusable());
}

TEST_F(pg_async_connection_test, a_statement_that_failed_to_parse_is_parsed_again_later) {
  conn_ = open();
  ASSERT_TRUE(conn_);
  const std::string sql = "SELECT a FROM qf_created_later WHERE a = $1::int";
  EXPECT_EQ(relay_named(sql, {"1"})->error_code, "42P01");
  EXPECT_EQ(conn_->prepared_statements().size(), 0u);
  EXPECT_EQ(relay("CREATE TEMP TABLE qf_created_later AS SELECT 1 AS a")->error_code, "");
  auto found = relay_named(sql, {"1"});
  EXPECT_EQ(found->error_code, "");
  EXPECT_EQ(found->first_cell(), "1");
  EXPECT_EQ(server_prepared(), "qf_s2=" + sql); // qf_s1 was never made
}

TEST_F(pg_async_connection_test, an_error_at_execution_keeps_the_statement_prepared) {
  conn_ = open();
  ASSERT_TRUE(conn_);
  const std::string sql = "SELECT 10 / $1::int";
  EXPECT_EQ(relay_named(sql, {"0"})->error_code, "22012");
  EXPECT_EQ(relay_named(sql, {"5"})->first_cell(), "2");
  EXPECT_EQ(server_prepared(), "qf_s1=" + sql);
}

TEST_F(pg_async_connection_test, statements_past_capacity_are_closed_on_the_server) {
  conn_ = open();
  ASSERT_TRUE(conn_);
  const size_t n = qf::pgwire::server_statements::default_capacity + 5;
  for (size_t i = 0; i < n; ++i)
    ASSERT_EQ(relay_named("SELECT " + std::to_string(i) + " + $1::int", {"0"})->first_cell(),
              std::to_string(i));
  EXPECT_EQ(relay("SELECT count(*) FROM pg_prepared_statements")->first_cell(),
            std::to_string(qf::pgwire::server_statements::default_capacity));
  // The least recent went: the first is parsed again, under a new name.
  EXPECT_EQ(relay_named("SELECT 0 + $1::int", {"0"})->first_cell(), "0");
  EXPECT_EQ(relay("SELECT count(*) FROM pg_prepared_statements WHERE statement = "
                  "'SELECT 0 + $1::int'")
              ->first_cell(),
            "1");
}

TEST_F(pg_async_connection_test, names_deallocated_behind_our_back_are_prepared_again) {
  conn_ = open();
  ASSERT_TRUE(conn_);
  const std::string sql = "SELECT $1::text";
  EXPECT_EQ(relay_named(sql, {"a"})->first_cell(), "a");
  // Sessions answer DEALLOCATE themselves; a relayed one can only come from
  // elsewhere, as this one: the next run finds its statement gone...
  EXPECT_EQ(relay("DEALLOCATE ALL")->error_code, "");
  EXPECT_EQ(relay_named(sql, {"b"})->error_code, "26000");
  // ... and the one after runs.
  EXPECT_EQ(relay_named(sql, {"c"})->first_cell(), "c");
  EXPECT_EQ(relay("SELECT count(*) FROM pg_prepared_statements")->first_cell(), "1");
}

TEST_F(pg_async_connection_test, a_server_error_and_hang_up_read_in_one_event_end_the_relay) {
  // The server says why and closes while the loop is busy elsewhere: epoll
  // then announces both at once, and the read that takes the error comes
  // back short with the end of the stream still to read. A relay that took
  // the short read for "nothing more" waited forever for an event that had
  // come already, holding its client's slot.
  conn_ = open();
  ASSERT_TRUE(conn_);
  auto c = std::make_shared<relay_collector>();
  auto finished = c->finished;
  const std::string sql = "SELECT pg_sleep(20) AS in_one_event";
  loop_->post([&, c] { conn_->relay(sql, c); });

  PGconn* admin = PQconnectdb(server_url().c_str());
  ASSERT_EQ(PQstatus(admin), CONNECTION_OK);
  std::string pid;
  for (int i = 0; i < 100 && pid.empty(); ++i) {
    PGresult* res = PQexec(admin, ("SELECT pid FROM pg_stat_activity WHERE state = 'active' "
                                   "AND query = '" + sql + "'").c_str());
    if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
      pid = PQgetvalue(res, 0, 0);
    PQclear(res);
    if (pid.empty())
      std::this_thread::sleep_for(20ms);
  }
  ASSERT_FALSE(pid.empty());
  std::promise<void> busy;
  loop_->post([&] {
    busy.set_value();
    std::this_thread::sleep_for(500ms); // the error and the hang-up arrive meanwhile
  });
  busy.get_future().wait();
  PGresult* res = PQexec(admin, ("SELECT pg_terminate_backend(" + pid + ")").c_str());
  EXPECT_EQ(PQresultStatus(res), PGRES_TUPLES_OK);
  PQclear(res);
  PQfinish(admin);
  ASSERT_EQ(finished.wait_for(10s), std::future_status::ready)
    << "the relay missed the server's hang-up";
  EXPECT_EQ(c->error_code, "57P01");
  EXPECT_FALSE(conn_->reusable());
}

TEST_F(pg_async_connection_test, a_server_that_takes_the_connection_and_says_nothing_times_out) {
  test_support::silent_listener silent;
  ASSERT_NE(silent.port(), 0);
  std::promise<std::string> failed;
  auto started = std::chrono::steady_clock::now();
  loop_->post([&] {
    pg_async_connection::open(
      "host=127.0.0.1 port=" + std::to_string(silent.port()) + " user=nobody", *loop_,
      [&](std::shared_ptr<pg_async_connection> c, std::string why) {
        EXPECT_FALSE(c);
        failed.set_value(why);
      },
      300ms);
  });
  auto f = failed.get_future();
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  EXPECT_NE(f.get().find("timeout expired"), std::string::npos);
  EXPECT_GE(std::chrono::steady_clock::now() - started, 300ms);
}

TEST_F(pg_async_connection_test, the_lane_pool_hands_each_loop_only_its_own_connections) {
  // A connection is watched by the loop it was opened on: handed to a
  // session on another wire thread, its events would reach the wrong one.
  auto other = io::event_loop::create();
  other->start();
  auto mine = open();
  auto theirs = open_on(*other);
  ASSERT_TRUE(mine && theirs);
  pg_lane_pool pool(server_url(), 10);
  pool.give_back(mine);
  pool.give_back(theirs);

  EXPECT_EQ(pool.take(*other), theirs);
  EXPECT_EQ(pool.take(*other), nullptr) << "took the first loop's connection";
  EXPECT_EQ(pool.take(*loop_), mine);
  EXPECT_EQ(pool.take(*loop_), nullptr);

  pool.give_back(theirs);
  pool.retire();
  EXPECT_EQ(pool.take(*other), nullptr);
  loop_->post([c = std::move(mine)] {});
  other->post([c = std::move(theirs)] {});
  other->stop();
}

TEST_F(pg_async_connection_test, the_lane_pool_prefers_a_connection_with_the_session_settings) {
  // A client whose settings are on an idle connection gets that one: no
  // replay before its statement, when clients with different ones share
  // the pool (bench/settings_replay.sh).
  auto plain = open();
  auto set = open();
  ASSERT_TRUE(plain && set);
  sql::session_settings app;
  app.apply("SET search_path = app");
  set->settings_now(app);
  pg_lane_pool pool(server_url(), 10);
  pool.give_back(set);
  pool.give_back(plain); // the last given back: what take() would hand out first
  auto has = [](const sql::session_settings& wanted) {
    return [&wanted](const pg_async_connection& c) { return c.settings() == wanted; };
  };
  EXPECT_EQ(pool.take(*loop_, has(app)), set);
  pool.give_back(set);
  sql::session_settings none;
  EXPECT_EQ(pool.take(*loop_, has(none)), plain);
  sql::session_settings other;
  other.apply("SET work_mem = '1MB'");
  EXPECT_EQ(pool.take(*loop_, has(other)), set) << "none it prefers: any";
  EXPECT_EQ(pool.take(*loop_, has(other)), nullptr);
  loop_->post([a = std::move(plain), b = std::move(set)] {});
}

TEST_F(pg_async_connection_test, a_loop_without_idle_connections_gets_another_loops_moved_over) {
  // A client that connects per statement lands on each wire thread in
  // turn: were the other loop's idle connection not moved, every other
  // statement would cost a backend connection.
  auto other = io::event_loop::create();
  other->start();
  conn_ = open();
  ASSERT_TRUE(conn_);
  auto pid = run("SELECT pg_backend_pid()", {})->first_cells.at(0);
  pg_lane_pool pool(server_url(), 1);
  pool.give_back(conn_);
  ASSERT_EQ(pool.take(*other), nullptr);

  std::string why;
  auto moved = test_support::fetch_from(pool, *other, &why);
  EXPECT_EQ(moved, conn_) << "opened a new connection instead: " << why;
  ASSERT_TRUE(moved);
  EXPECT_EQ(&moved->loop(), other.get());

  // It works on its new loop, as the same backend.
  auto c = std::make_shared<collector>();
  c->conn = moved;
  c->conn_loop = other.get();
  auto finished = c->done.get_future();
  other->post([&] { moved->run("SELECT pg_backend_pid()", {}, c); });
  ASSERT_EQ(finished.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(c->first_cells, std::vector<std::string>{pid});

  // With nothing idle anywhere, fetch() opens a new one.
  auto fresh = test_support::fetch_from(pool, *loop_);
  ASSERT_TRUE(fresh);
  EXPECT_NE(fresh, moved);
  EXPECT_EQ(&fresh->loop(), loop_.get());
  loop_->post([f = std::move(fresh)] {});
  conn_.reset();
  c.reset();
  other->post([m = std::move(moved)] {});
  other->stop();
}

TEST_F(pg_async_connection_test, a_run_hands_over_the_servers_notices_before_its_rows) {
  // A run, not a relay, is what a TLS connection to the server takes: the
  // notices are libpq's to read, and they must reach the client.
  conn_ = open();
  ASSERT_TRUE(conn_);
  auto c = run("DO $$ BEGIN RAISE NOTICE 'from the run %', 7; RAISE WARNING 'careful'; END $$", {});
  EXPECT_TRUE(c->error_code.empty()) << c->error_code;
  EXPECT_EQ(c->notices, (std::vector<std::string>{"NOTICE 00000 from the run 7",
                                                  "WARNING 01000 careful"}));
  auto quiet = run("SELECT 1", {});
  EXPECT_TRUE(quiet->notices.empty()) << "a notice was handed over twice";
}

TEST_F(pg_async_connection_test, a_moved_connection_the_server_closed_meanwhile_is_replaced) {
  // The move checks the connection on its new loop: one whose backend was
  // terminated while idle is dropped there, and a new one opened instead.
  auto other = io::event_loop::create();
  other->start();
  conn_ = open();
  ASSERT_TRUE(conn_);
  auto pid = run("SELECT pg_backend_pid()", {})->first_cells.at(0);
  pg_lane_pool pool(server_url(), 1);
  pool.give_back(conn_);
  PGconn* admin = PQconnectdb(server_url().c_str());
  ASSERT_EQ(PQstatus(admin), CONNECTION_OK);
  PGresult* res = PQexec(admin, ("SELECT pg_terminate_backend(" + pid + ")").c_str());
  EXPECT_EQ(PQresultStatus(res), PGRES_TUPLES_OK);
  PQclear(res);
  PQfinish(admin);
  std::this_thread::sleep_for(200ms); // the server's goodbye reaches the socket

  std::string why;
  auto fresh = test_support::fetch_from(pool, *other, &why);
  ASSERT_TRUE(fresh) << why;
  EXPECT_NE(fresh, conn_) << "handed over the closed connection";
  EXPECT_EQ(&fresh->loop(), other.get());
  conn_.reset();
  other->post([f = std::move(fresh)] {});
  other->stop();
}
