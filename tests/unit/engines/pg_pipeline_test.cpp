// Plain statements relayed behind each other on one connection
// (pg_async_connection::relay_behind): each gets its own answer in order,
// and none waits on a statement that stalls, a client that stops reading,
// a cancel or a lost connection. Against the real PostgreSQL the test
// command starts (QF_PG_URL), on a real event loop.
#include "engines/pg_async_connection.hpp"
#include "tests/unit/support/pg_connection.hpp"
#include "tests/unit/support/relay_collector.hpp"

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <chrono>
#include <future>
#include <thread>
#include <utility>

using namespace qf;
using namespace qf::engines;
using namespace std::chrono_literals;
using qf::test_support::relay_collector;

namespace {

class pg_pipeline_test : public ::testing::Test {
protected:
  void SetUp() override {
    loop_ = io::event_loop::create();
    loop_->start();
    conn_ = test_support::open_pg_connection(*loop_);
    ASSERT_TRUE(conn_);
  }
  void TearDown() override {
    loop_->post([c = std::move(conn_)] {}); // closed on its loop
    loop_->stop();
  }

  /// Runs `fn` on the loop and waits for it.
  template <class Fn>
  auto on_loop(Fn fn) {
    std::packaged_task<decltype(fn())()> task(std::move(fn));
    auto result = task.get_future();
    loop_->post([&task] { task(); });
    EXPECT_EQ(result.wait_for(10s), std::future_status::ready);
    return result.get();
  }

  /// The first statement relayed as plain, the rest behind it, in one task
  /// of the loop: all of them go before the first can end.
  std::vector<std::shared_ptr<relay_collector>> pipeline(std::vector<std::string> sqls) {
    std::vector<std::shared_ptr<relay_collector>> cs;
    for (size_t i = 0; i < sqls.size(); ++i)
      cs.push_back(std::make_shared<relay_collector>());
    bool all_taken = on_loop([&] {
      conn_->relay(sqls[0], cs[0], 0, true);
      for (size_t i = 1; i < sqls.size(); ++i) {
        if (!conn_->takes_more_behind(8))
          return false;
        conn_->relay_behind(sqls[i], cs[i]);
      }
      return true;
    });
    EXPECT_TRUE(all_taken);
    return cs;
  }

  /// A relay of many rows whose listener stops reading at once, and one
  /// behind it.
  std::pair<std::shared_ptr<relay_collector>, std::shared_ptr<relay_collector>>
  reader_that_stops_and_one_behind() {
    auto reader = std::make_shared<relay_collector>();
    reader->pause_first = true;
    auto waiting = std::make_shared<relay_collector>();
    on_loop([&] {
      conn_->relay("SELECT g FROM generate_series(1, 200000) g", reader, 0, true);
      conn_->relay_behind("SELECT 'waiting'", waiting);
      return 0;
    });
    return {reader, waiting};
  }

  /// A connection back in step, once the answers nobody hears were read:
  /// a new relay gets its own answer.
  void expect_in_step() {
    for (int i = 0; i < 1000 && !on_loop([&] { return conn_->reusable(); }); ++i)
      std::this_thread::sleep_for(10ms);
    auto c = std::make_shared<relay_collector>();
    on_loop([&] {
      EXPECT_TRUE(conn_->reusable());
      conn_->relay("SELECT 'in step'", c);
      return 0;
    });
    ASSERT_TRUE(c->ended());
    EXPECT_EQ(c->first_cell(), "in step");
  }

  /// Runs `what` (of pid) from another session on the server once `sql`
  /// (without quotes) runs there: true when it did.
  static bool once_running(const std::string& sql, const std::string& what) {
    PGconn* admin = PQconnectdb(test_support::pg_server_url().c_str());
    EXPECT_EQ(PQstatus(admin), CONNECTION_OK);
    bool done = false;
    auto query = "SELECT " + what + " FROM pg_stat_activity WHERE query = '" + sql
                 + "' AND state = 'active'";
    for (int i = 0; i < 100 && !done; ++i) {
      PGresult* res = PQexec(admin, query.c_str());
      done = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1;
      PQclear(res);
      if (!done)
        std::this_thread::sleep_for(50ms);
    }
    PQfinish(admin);
    return done;
  }

  std::shared_ptr<io::event_loop> loop_;
  std::shared_ptr<pg_async_connection> conn_;
};

} // namespace

TEST_F(pg_pipeline_test, each_statement_behind_another_gets_its_own_answer_in_turn) {
  conn_->pipeline_patience(60s); // none of them is moved, however slow the machine
  auto cs = pipeline({"SELECT 'first'", "SELECT 'second'", "SELECT * FROM no_such_table_behind",
                      "SELECT g FROM generate_series(1, 3000) g", "SELECT 'last'"});
  for (const auto& c : cs)
    ASSERT_TRUE(c->ended());
  EXPECT_EQ(cs[0]->first_cell(), "first");
  EXPECT_EQ(cs[1]->first_cell(), "second");
  EXPECT_EQ(cs[1]->error_code, "");
  EXPECT_EQ(cs[2]->error_code, "42P01"); // and those behind it run as ever
  EXPECT_EQ(cs[3]->first_cell(), "1");
  EXPECT_EQ(cs[3]->data_rows, 3000);
  EXPECT_EQ(cs[4]->first_cell(), "last");
  for (const auto& c : cs)
    EXPECT_FALSE(c->moved);
  EXPECT_FALSE(on_loop([&] { return conn_->pipelining(); }));
  expect_in_step();
}

TEST_F(pg_pipeline_test, takes_more_only_up_to_its_depth_and_while_the_running_one_is_young) {
  auto first = std::make_shared<relay_collector>();
  auto second = std::make_shared<relay_collector>();
  auto takes = on_loop([&] {
    std::vector<bool> t;
    t.push_back(conn_->takes_more_behind(8)); // nothing runs
    conn_->relay("SELECT 'first' FROM pg_sleep(1)", first, 0, true);
    t.push_back(conn_->takes_more_behind(2));
    conn_->relay_behind("SELECT 'second'", second);
    t.push_back(conn_->takes_more_behind(2));
    t.push_back(conn_->takes_more_behind(3));
    return t;
  });
  EXPECT_EQ(takes, (std::vector<bool>{false, true, false, true}));
  std::this_thread::sleep_for(pg_async_connection::pipeline_join_window * 5);
  EXPECT_FALSE(on_loop([&] { return conn_->takes_more_behind(8); }))
    << "a statement that has run for a while may run long: nobody more waits on it";
  ASSERT_TRUE(first->ended() && second->ended());
}

TEST_F(pg_pipeline_test, a_connection_whose_statements_run_long_takes_nobody_behind) {
  // Statements of a few milliseconds run side by side on the server's
  // cores faster than in turn on one backend.
  for (int i = 0; i < 4; ++i) {
    auto c = std::make_shared<relay_collector>();
    on_loop([&] {
      conn_->relay("SELECT pg_sleep(0.05)", c);
      return 0;
    });
    ASSERT_TRUE(c->ended());
  }
  auto next = std::make_shared<relay_collector>();
  EXPECT_FALSE(on_loop([&] {
    conn_->relay("SELECT 'young'", next, 0, true);
    return conn_->takes_more_behind(8);
  }));
  ASSERT_TRUE(next->ended());
}

TEST_F(pg_pipeline_test, those_behind_a_statement_that_runs_long_are_moved_before_it_ends) {
  auto cs = pipeline({"SELECT 'slow' FROM pg_sleep(3)", "SELECT 'waiting'"});
  auto& slow = cs[0];
  auto& waiting = cs[1];
  ASSERT_TRUE(waiting->ended());
  EXPECT_TRUE(waiting->moved);
  EXPECT_TRUE(slow->still_running()) << "moved only once the statement ahead ended";
  ASSERT_TRUE(slow->ended());
  EXPECT_EQ(slow->first_cell(), "slow");
  EXPECT_EQ(waiting->messages, "") << "the server's answer to a moved statement is nobody's";
  expect_in_step();
}

TEST_F(pg_pipeline_test, those_behind_a_client_that_stops_reading_are_moved) {
  conn_->pipeline_patience(60s); // moved for the pause, not the time
  auto [reader, waiting] = reader_that_stops_and_one_behind();
  ASSERT_TRUE(waiting->ended());
  EXPECT_TRUE(waiting->moved);
  EXPECT_TRUE(reader->paused);
  on_loop([&] {
    conn_->resume();
    return 0;
  });
  ASSERT_TRUE(reader->ended());
  EXPECT_EQ(reader->data_rows, 200000);
  expect_in_step();
}

TEST_F(pg_pipeline_test, a_cancelled_follower_is_taken_off_and_the_others_are_answered) {
  conn_->pipeline_patience(60s);
  auto cs = pipeline({"SELECT 'first' FROM pg_sleep(0.5)", "SELECT 'cancelled'", "SELECT 'third'"});
  on_loop([&] {
    conn_->cancel(cs[1].get());
    return 0;
  });
  ASSERT_TRUE(cs[1]->ended());
  EXPECT_TRUE(cs[1]->moved) << "its session, which asked, ends it as cancelled";
  EXPECT_EQ(cs[1]->messages, "");
  ASSERT_TRUE(cs[0]->ended() && cs[2]->ended());
  EXPECT_EQ(cs[0]->first_cell(), "first");
  EXPECT_EQ(cs[0]->error_code, "") << "the cancel did not reach the server";
  EXPECT_EQ(cs[2]->first_cell(), "third");
  expect_in_step();
}

TEST_F(pg_pipeline_test, a_cancel_where_nothing_pipelines_stops_what_runs_there) {
  // A session's statement waits for its settings replay, whose listener is
  // not the session: the cancel still stops the replay.
  const std::string sql = "SELECT 1 AS replaying FROM pg_sleep(5)";
  auto replay = std::make_shared<relay_collector>();
  relay_collector session;
  on_loop([&] {
    conn_->relay(sql, replay);
    return 0;
  });
  ASSERT_TRUE(once_running(sql, "pid"));
  on_loop([&] {
    conn_->cancel(&session);
    return 0;
  });
  ASSERT_TRUE(replay->ended());
  EXPECT_EQ(replay->error_code, "57014");
}

TEST_F(pg_pipeline_test, a_connection_that_holds_a_clients_state_takes_nobody_behind) {
  conn_->hold_private_state();
  auto first = std::make_shared<relay_collector>();
  EXPECT_FALSE(on_loop([&] {
    conn_->relay("SELECT 'own' FROM pg_sleep(0.1)", first, 0, true);
    return conn_->pipelining() || conn_->takes_more_behind(8);
  }));
  ASSERT_TRUE(first->ended());
}

TEST_F(pg_pipeline_test, a_head_left_by_its_client_after_the_others_moved_is_let_go) {
  auto [reader, waiting] = reader_that_stops_and_one_behind();
  ASSERT_TRUE(waiting->ended());
  EXPECT_TRUE(waiting->moved);
  on_loop([&] {
    conn_->abandon(reader.get());
    return 0;
  });
  // Nothing keeps it alive but this test: no self-reference is left.
  long owners = 0;
  for (int i = 0; i < 500; ++i) {
    owners = on_loop([&] { return conn_.use_count(); });
    if (owners == 1)
      break;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(owners, 1);
  EXPECT_FALSE(on_loop([&] { return conn_->reusable(); }));
}

TEST_F(pg_pipeline_test, a_pipeline_whose_last_answer_was_nobodys_goes_home) {
  conn_->pipeline_patience(60s);
  std::promise<void> home;
  conn_->home([&home](std::shared_ptr<pg_async_connection>) { home.set_value(); });
  auto cs = pipeline({"SELECT 'first' FROM pg_sleep(0.1)", "SELECT 'leaving'"});
  on_loop([&] {
    conn_->abandon(cs[1].get());
    return 0;
  });
  ASSERT_TRUE(cs[0]->ended());
  EXPECT_EQ(home.get_future().wait_for(10s), std::future_status::ready)
    << "no session holds it to give it back";
  expect_in_step();
}

TEST_F(pg_pipeline_test, cancelling_the_running_one_moves_those_behind_it_first) {
  conn_->pipeline_patience(60s);
  const std::string sql = "SELECT 1 AS first FROM pg_sleep(5)";
  auto cs = pipeline({sql, "SELECT 'waiting'"});
  ASSERT_TRUE(once_running(sql, "pid")); // a cancel before it runs is lost
  on_loop([&] {
    conn_->cancel(cs[0].get());
    return 0;
  });
  ASSERT_TRUE(cs[1]->ended());
  EXPECT_TRUE(cs[1]->moved);
  ASSERT_TRUE(cs[0]->ended());
  EXPECT_EQ(cs[0]->error_code, "57014");
}

TEST_F(pg_pipeline_test, a_cancelled_one_takes_nobody_more_behind_it) {
  conn_->pipeline_patience(60s);
  auto first = std::make_shared<relay_collector>();
  bool takes = on_loop([&] {
    conn_->relay("SELECT 'first' FROM pg_sleep(5)", first, 0, true);
    conn_->cancel(first.get());
    return conn_->takes_more_behind(8);
  });
  EXPECT_FALSE(takes) << "the cancel may land after the statement it was for";
  ASSERT_TRUE(first->ended());
}

TEST_F(pg_pipeline_test, a_follower_that_leaves_costs_the_others_nothing) {
  conn_->pipeline_patience(60s);
  auto cs = pipeline({"SELECT 'first' FROM pg_sleep(0.3)", "SELECT 'leaving'", "SELECT 'third'"});
  on_loop([&] {
    conn_->abandon(cs[1].get());
    return 0;
  });
  ASSERT_TRUE(cs[0]->ended() && cs[2]->ended());
  EXPECT_EQ(cs[0]->first_cell(), "first");
  EXPECT_EQ(cs[2]->first_cell(), "third");
  EXPECT_TRUE(cs[1]->still_running()) << "nobody hears it";
  expect_in_step();
}

TEST_F(pg_pipeline_test, a_running_statement_whose_client_left_is_cancelled_and_the_others_moved) {
  conn_->pipeline_patience(60s);
  const std::string sql = "SELECT 1 AS leaving FROM pg_sleep(5)";
  auto cs = pipeline({sql, "SELECT 'waiting'"});
  ASSERT_TRUE(once_running(sql, "pid"));
  on_loop([&] {
    conn_->abandon(cs[0].get());
    return 0;
  });
  ASSERT_TRUE(cs[1]->ended());
  EXPECT_TRUE(cs[1]->moved);
  EXPECT_FALSE(on_loop([&] { return conn_->reusable(); }));
  PGconn* admin = PQconnectdb(test_support::pg_server_url().c_str());
  ASSERT_EQ(PQstatus(admin), CONNECTION_OK);
  bool still_running = true;
  for (int i = 0; i < 200 && still_running; ++i) {
    PGresult* res = PQexec(admin, ("SELECT 1 FROM pg_stat_activity WHERE state = 'active' AND query = '"
                                   + sql + "'").c_str());
    still_running = PQntuples(res) > 0;
    PQclear(res);
    if (still_running)
      std::this_thread::sleep_for(20ms);
  }
  PQfinish(admin);
  EXPECT_FALSE(still_running) << "the statement nobody waits for any more was not cancelled";
}

TEST_F(pg_pipeline_test, those_behind_a_lost_connection_are_moved_not_failed) {
  conn_->pipeline_patience(60s);
  const std::string sql = "SELECT 1 AS doomed FROM pg_sleep(20)";
  auto cs = pipeline({sql, "SELECT 'waiting'"});
  ASSERT_TRUE(once_running(sql, "pg_terminate_backend(pid)"));
  ASSERT_TRUE(cs[0]->ended() && cs[1]->ended());
  EXPECT_NE(cs[0]->error_code, "");
  EXPECT_TRUE(cs[1]->moved);
  EXPECT_FALSE(on_loop([&] { return conn_->reusable(); }));
}

TEST_F(pg_pipeline_test, executes_behind_each_other_keep_their_parameters_and_kept_statements) {
  conn_->pipeline_patience(60s);
  const std::string named = "SELECT $1::text AS v";
  auto key = pgwire::statement_key(named, {});
  auto first = std::make_shared<relay_collector>();
  auto unnamed = std::make_shared<relay_collector>();
  auto parses = on_loop([&] {
    std::vector<bool> p;
    p.push_back(conn_->parses(key));
    conn_->relay_extended(named, {"a"}, {}, {}, false, true, first, true);
    p.push_back(conn_->parses(key)); // its Parse is on its way
    conn_->relay_extended_behind("SELECT $1::int + 1 AS w", {"41"}, {}, {}, true, false, unnamed);
    return p;
  });
  EXPECT_EQ(parses, (std::vector<bool>{false, true}));
  ASSERT_TRUE(first->ended() && unnamed->ended());
  EXPECT_EQ(first->first_cell(), "a");
  EXPECT_EQ(unnamed->first_cell(), "42");
  EXPECT_EQ(unnamed->messages[0], 'T') << "its Describe's RowDescription comes first";

  auto second = std::make_shared<relay_collector>();
  auto third = std::make_shared<relay_collector>();
  EXPECT_FALSE(on_loop([&] {
    conn_->relay_extended("SELECT 'head'", {}, {}, {}, false, false, second, true);
    conn_->relay_extended_behind(named, {"b"}, {}, {}, false, true, third);
    return conn_->parses(key); // prepared by the first: not parsed again
  }));
  ASSERT_TRUE(second->ended() && third->ended());
  EXPECT_EQ(third->first_cell(), "b");
  expect_in_step();
}

TEST_F(pg_pipeline_test, a_failed_parse_ahead_fails_only_its_own_statement) {
  conn_->pipeline_patience(60s);
  const std::string broken = "SELECT x FROM no_such_table_ahead WHERE x = $1";
  auto failing = std::make_shared<relay_collector>();
  auto behind_it = std::make_shared<relay_collector>();
  on_loop([&] {
    conn_->relay_extended(broken, {"1"}, {}, {}, false, true, failing, true);
    conn_->relay_extended_behind("SELECT $1::text AS v", {"fine"}, {}, {}, false, true, behind_it);
    return 0;
  });
  ASSERT_TRUE(failing->ended() && behind_it->ended());
  EXPECT_EQ(failing->error_code, "42P01");
  EXPECT_EQ(behind_it->error_code, "");
  EXPECT_EQ(behind_it->first_cell(), "fine");
  EXPECT_FALSE(on_loop([&] { return conn_->parses(pgwire::statement_key(broken, {})); }));
  // The failed one is parsed afresh next time, and fails alike.
  auto again = std::make_shared<relay_collector>();
  on_loop([&] {
    conn_->relay_extended(broken, {"1"}, {}, {}, false, true, again, true);
    return 0;
  });
  ASSERT_TRUE(again->ended());
  EXPECT_EQ(again->error_code, "42P01");
  expect_in_step();
}
