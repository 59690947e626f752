// The non-blocking MariaDB connection of the MySQL wire fast lane, against
// the real MariaDB server the test command starts (QF_MY_URL), on a real
// event loop: rows streamed in order through a pause, counts, errors with
// their codes, KILL QUERY, a killed connection, a refused login.
#include "engines/lane_pool.hpp"
#include "engines/mysql_async_connection.hpp"
#include "tests/unit/support/fetch_from_pool.hpp"
#include "tests/unit/support/silent_listener.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <thread>

using namespace qf;
using namespace qf::engines;
using namespace std::chrono_literals;

namespace {

mysql_target server() {
  auto* url = std::getenv("QF_MY_URL");
  auto t = parse_mysql_url(url ? url : "mysql://qf:qf@127.0.0.1:13306/qftest");
  EXPECT_TRUE(t);
  if (t && t->port == 0)
    t->port = 3306;
  return t.value_or(mysql_target{});
}

/// Collects a run; pauses once after the first rows, resumed from the loop.
struct collector : mysql_async_listener, std::enable_shared_from_this<collector> {
  std::shared_ptr<mysql_async_connection> conn;
  io::event_loop* loop = nullptr;
  std::vector<column> columns;
  bool columns_came = false;
  std::vector<std::string> first_cells;
  int64_t affected = -2;
  std::optional<engine_error> error;
  bool paused_once = false;
  std::promise<void> done;

  void on_columns(std::vector<column> cols) override {
    columns = std::move(cols);
    columns_came = true;
  }
  bool on_rows(row_batch& batch) override {
    EXPECT_TRUE(columns_came) << "rows before their columns";
    for (size_t r = 0; r < batch.rows(); ++r)
      first_cells.push_back(batch.at(r, 0) ? *batch.at(r, 0) : "NULL");
    if (paused_once)
      return true;
    paused_once = true;
    loop->post([self = shared_from_this()] { self->conn->resume(); });
    return false;
  }
  void on_result_end(int64_t) override {
    ++results_ended;
    columns_came = false;
  }
  void on_done(int64_t n) override {
    affected = n;
    done.set_value();
  }
  void on_failed(const engine_error& e) override {
    error = e;
    done.set_value();
  }
  int results_ended = 0;
};

class mysql_async_connection_test : public ::testing::Test {
protected:
  void SetUp() override {
    loop_ = io::event_loop::create();
    loop_->start();
  }
  void TearDown() override {
    loop_->post([c = std::move(conn_)] {}); // closed on its loop
    loop_->stop();
  }

  /// The connection, or null with the reason in `why`.
  std::shared_ptr<mysql_async_connection> open(const mysql_target& t, std::string& why) {
    std::promise<std::pair<std::shared_ptr<mysql_async_connection>, std::string>> opened;
    loop_->post([&] {
      mysql_async_connection::open(t, *loop_,
                                   [&](std::shared_ptr<mysql_async_connection> c, std::string e) {
                                     opened.set_value({std::move(c), std::move(e)});
                                   });
    });
    auto f = opened.get_future();
    EXPECT_EQ(f.wait_for(10s), std::future_status::ready);
    auto [c, e] = f.get();
    why = e;
    return c;
  }

  std::shared_ptr<collector> start(const std::string& sql, parameters params = {}) {
    auto c = std::make_shared<collector>();
    c->conn = conn_;
    c->loop = loop_.get();
    loop_->post([this, c, sql, params] { conn_->run(sql, params, c); });
    return c;
  }

  std::shared_ptr<collector> run(const std::string& sql, parameters params = {}) {
    auto c = start(sql, std::move(params));
    EXPECT_EQ(c->done.get_future().wait_for(30s), std::future_status::ready) << sql;
    return c;
  }

  bool reusable() {
    std::promise<bool> answer;
    loop_->post([&] { answer.set_value(conn_->reusable()); });
    return answer.get_future().get();
  }

  std::shared_ptr<io::event_loop> loop_;
  std::shared_ptr<mysql_async_connection> conn_;
};

} // namespace

TEST_F(mysql_async_connection_test, streams_a_parameterized_result_in_order_through_a_pause) {
  std::string why;
  conn_ = open(server(), why);
  ASSERT_TRUE(conn_) << why;
  auto c = run("SELECT seq AS n, IF(seq % 3 = 0, NULL, $2) AS tag FROM seq_1_to_20000 "
               "WHERE seq <= $1",
               {"20000", "it's"});
  ASSERT_FALSE(c->error) << c->error->what();
  ASSERT_EQ(c->columns.size(), 2u);
  EXPECT_EQ(c->columns[0].name, "n");
  EXPECT_EQ(c->columns[1].name, "tag");
  ASSERT_EQ(c->first_cells.size(), 20000u);
  for (size_t i = 0; i < c->first_cells.size(); ++i)
    ASSERT_EQ(c->first_cells[i], std::to_string(i + 1)) << "row " << i;
  EXPECT_TRUE(c->paused_once);
  EXPECT_TRUE(reusable());

  auto again = run("SELECT NULL AS nothing, 'é' AS accent");
  EXPECT_EQ(again->first_cells, std::vector<std::string>{"NULL"});
}

TEST_F(mysql_async_connection_test, a_statement_without_rows_reports_its_count) {
  std::string why;
  conn_ = open(server(), why);
  ASSERT_TRUE(conn_) << why;
  EXPECT_FALSE(run("CREATE TEMPORARY TABLE qf_async_t (a INT)")->error);
  auto c = run("INSERT INTO qf_async_t VALUES (1), (2), (3)");
  ASSERT_FALSE(c->error) << c->error->what();
  EXPECT_FALSE(c->columns_came);
  EXPECT_EQ(c->affected, 3);
  EXPECT_EQ(run("SELECT COUNT(*) FROM qf_async_t")->first_cells, std::vector<std::string>{"3"});
}

TEST_F(mysql_async_connection_test, a_call_reports_each_result_of_its_procedure_and_leaves_none_unread) {
  std::string why;
  conn_ = open(server(), why);
  ASSERT_TRUE(conn_) << why;
  ASSERT_FALSE(run("CREATE TEMPORARY TABLE qf_async_calls (a INT)")->error);
  ASSERT_FALSE(run("CREATE OR REPLACE PROCEDURE qf_async_sets(IN n INT) BEGIN "
                   "SELECT n AS p1; INSERT INTO qf_async_calls VALUES (n); "
                   "SELECT n + 1 AS p2 UNION ALL SELECT n + 2; END")->error);
  auto c = run("CALL qf_async_sets(5)");
  ASSERT_FALSE(c->error) << c->error->what();
  // Two result sets, then the CALL's status: two ends before the last.
  EXPECT_EQ(c->results_ended, 2);
  EXPECT_EQ(c->first_cells, (std::vector<std::string>{"5", "6", "7"}));
  EXPECT_TRUE(reusable());
  EXPECT_EQ(run("SELECT COUNT(*) FROM qf_async_calls")->first_cells,
            std::vector<std::string>{"1"}) << "the next statement reads its own result";

  // A procedure that fails after its first result set: the rows, then the error.
  ASSERT_FALSE(run("CREATE OR REPLACE PROCEDURE qf_async_fails() BEGIN "
                   "SELECT 1 AS first; SELECT * FROM qf_no_such_table_here; END")->error);
  auto f = run("CALL qf_async_fails()");
  EXPECT_EQ(f->first_cells, std::vector<std::string>{"1"});
  ASSERT_TRUE(f->error);
  EXPECT_EQ(f->error->vendor_code(), 1146);
  EXPECT_EQ(run("SELECT 2")->first_cells, std::vector<std::string>{"2"});
  run("DROP PROCEDURE qf_async_sets");
  run("DROP PROCEDURE qf_async_fails");
}

TEST_F(mysql_async_connection_test, a_server_error_keeps_its_codes_and_the_connection) {
  std::string why;
  conn_ = open(server(), why);
  ASSERT_TRUE(conn_) << why;
  auto c = run("SELECT * FROM qf_no_such_table_here");
  ASSERT_TRUE(c->error);
  EXPECT_EQ(c->error->vendor_code(), 1146);
  EXPECT_EQ(c->error->sqlstate(), "42S02");
  EXPECT_EQ(c->error->kind(), error_kind::user);
  EXPECT_TRUE(reusable());
  EXPECT_EQ(run("SELECT 41 + 1")->first_cells, std::vector<std::string>{"42"});

  auto missing = run("SELECT $2", {"1"});
  ASSERT_TRUE(missing->error);
  EXPECT_EQ(missing->error->sqlstate(), "42P02");
  EXPECT_TRUE(reusable());
}

TEST_F(mysql_async_connection_test, cancel_kills_the_running_query) {
  std::string why;
  conn_ = open(server(), why);
  ASSERT_TRUE(conn_) << why;
  auto began = std::chrono::steady_clock::now();
  auto c = start("SELECT SLEEP(20)");
  std::this_thread::sleep_for(300ms);
  loop_->post([this] { conn_->cancel(); });
  ASSERT_EQ(c->done.get_future().wait_for(10s), std::future_status::ready);
  ASSERT_TRUE(c->error);
  EXPECT_EQ(c->error->kind(), error_kind::cancelled);
  EXPECT_LT(std::chrono::steady_clock::now() - began, 10s);
  auto next = run("SELECT 1");
  EXPECT_FALSE(next->error) << next->error->what();
  EXPECT_EQ(next->first_cells, std::vector<std::string>{"1"});
}

TEST_F(mysql_async_connection_test, a_connection_killed_mid_statement_fails_it_and_is_not_reused) {
  std::string why;
  conn_ = open(server(), why);
  ASSERT_TRUE(conn_) << why;
  auto id = run("SELECT CONNECTION_ID()")->first_cells.at(0);
  auto c = start("SELECT SLEEP(20)");
  std::this_thread::sleep_for(300ms);
  auto admin = open(server(), why);
  ASSERT_TRUE(admin) << why;
  auto killer = std::make_shared<collector>();
  killer->conn = admin;
  killer->loop = loop_.get();
  loop_->post([&] { admin->run("KILL CONNECTION " + id, {}, killer); });
  ASSERT_EQ(killer->done.get_future().wait_for(10s), std::future_status::ready);
  ASSERT_EQ(c->done.get_future().wait_for(10s), std::future_status::ready);
  ASSERT_TRUE(c->error);
  EXPECT_FALSE(reusable());
  loop_->post([a = std::move(admin)] {});
}

TEST_F(mysql_async_connection_test, a_refused_login_says_why) {
  auto t = server();
  t.password = "not-the-password";
  std::string why;
  auto c = open(t, why);
  EXPECT_FALSE(c);
  EXPECT_NE(why.find("Access denied"), std::string::npos) << why;
}

/// Stops reading after the first rows and never resumes.
struct stopper : mysql_async_listener {
  std::promise<void> first_rows;
  bool told = false;
  void on_columns(std::vector<column>) override {
    // nop
  }
  bool on_rows(row_batch&) override {
    if (!std::exchange(told, true))
      first_rows.set_value();
    return false;
  }
  void on_result_end(int64_t) override {
    ADD_FAILURE() << "an abandoned run reports nothing";
  }
  void on_done(int64_t) override {
    ADD_FAILURE() << "an abandoned run reports nothing";
  }
  void on_failed(const engine_error&) override {
    ADD_FAILURE() << "an abandoned run reports nothing";
  }
};

TEST_F(mysql_async_connection_test, a_result_abandoned_half_read_closes_the_connection_without_reading_on) {
  // The rest of the result is never read, so the connection cannot serve
  // another statement; closing it must not wait for those rows either.
  std::string why;
  conn_ = open(server(), why);
  ASSERT_TRUE(conn_) << why;
  auto s = std::make_shared<stopper>();
  loop_->post([this, s] {
    conn_->run("SELECT a.seq, REPEAT('x', 200) FROM seq_1_to_2000 a, seq_1_to_1000 b", {}, s);
  });
  ASSERT_EQ(s->first_rows.get_future().wait_for(10s), std::future_status::ready);
  auto began = std::chrono::steady_clock::now();
  loop_->post([this] { conn_->abandon(); });
  EXPECT_FALSE(reusable());
  loop_->post([c = std::move(conn_)] {}); // closed on its loop
  conn_ = open(server(), why); // the loop serves on
  ASSERT_TRUE(conn_) << why;
  EXPECT_EQ(run("SELECT 7")->first_cells, std::vector<std::string>{"7"});
  EXPECT_LT(std::chrono::steady_clock::now() - began, 5s);
}

TEST_F(mysql_async_connection_test, a_server_that_takes_the_connection_and_says_nothing_times_out) {
  test_support::silent_listener silent;
  ASSERT_NE(silent.port(), 0);
  mysql_target t;
  t.host = "127.0.0.1";
  t.port = silent.port();
  t.user = "nobody";
  t.connect_timeout_s = 1;
  auto started = std::chrono::steady_clock::now();
  std::string why;
  EXPECT_FALSE(open(t, why));
  EXPECT_GE(std::chrono::steady_clock::now() - started, 900ms);
  EXPECT_NE(why.find("cannot connect to MySQL"), std::string::npos) << why;
}

TEST_F(mysql_async_connection_test, an_idle_connection_moved_to_another_loop_serves_there) {
  // The lane pool moves an idle connection to a wire thread that has none.
  std::string why;
  conn_ = open(server(), why);
  ASSERT_TRUE(conn_) << why;
  auto id = run("SELECT CONNECTION_ID()")->first_cells.at(0);
  mysql_lane_pool pool(server(), 1);
  pool.give_back(conn_);
  auto other = io::event_loop::create();
  other->start();
  EXPECT_EQ(test_support::fetch_from(pool, *other, &why), conn_)
    << "opened a new connection instead: " << why;
  ASSERT_EQ(&conn_->loop(), other.get());

  std::swap(loop_, other); // the fixture runs statements on conn_'s loop
  EXPECT_EQ(run("SELECT CONNECTION_ID()")->first_cells, std::vector<std::string>{id});
  other->stop();
}
