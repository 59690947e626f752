// The books every frontend path keeps for a statement: its record made of
// what the path knew (times from the steady clock where the path read no
// wall clock, a query that never ran with no start), and its slot given
// back with the gauge first.
#include "actors/data/query_books.hpp"

#include <gtest/gtest.h>

using namespace std::chrono_literals;
using namespace qf;

namespace {

statement_facts facts(const cluster_state* cluster) {
  statement_facts f;
  f.id = "q1";
  f.user = "alice";
  f.protocol = "postgresWire";
  f.sql = "SELECT 1";
  f.status = "Success";
  f.group = "g";
  f.cluster = cluster;
  f.created = statement_facts::clock::time_point{} + 1h;
  f.created_wall_ms = 1'764'800'000'000;
  f.rows = 7;
  return f;
}

} // namespace

TEST(query_books, a_fast_lane_record_takes_its_times_from_the_steady_clock) {
  cluster_state pg{"pg", "postgres", 4, true};
  auto f = facts(&pg);
  f.admitted = f.started = f.created + 30ms;
  f.ended = f.created + 130ms;
  auto r = make_record(f);
  EXPECT_EQ(r.cluster_name, "pg");
  EXPECT_EQ(r.engine_type, "postgres");
  EXPECT_EQ(r.queue_duration_ms, 30);
  EXPECT_EQ(r.execution_duration_ms, 100);
  EXPECT_EQ(r.started_at_ms, f.created_wall_ms + 30);
  EXPECT_EQ(r.finished_at_ms, f.created_wall_ms + 130);
  EXPECT_EQ(r.rows_returned, 7);
}

TEST(query_books, wall_times_read_by_the_path_win_and_a_query_never_run_has_no_start) {
  cluster_state pg{"pg", "postgres", 4, true};
  auto f = facts(&pg);
  f.admitted = f.created + 5ms;
  f.started = f.created + 8ms;
  f.ended = f.created + 20ms;
  f.started_wall_ms = f.created_wall_ms + 9;
  f.finished_wall_ms = f.created_wall_ms + 21;
  auto r = make_record(f);
  EXPECT_EQ(r.queue_duration_ms, 5);
  EXPECT_EQ(r.execution_duration_ms, 12);
  EXPECT_EQ(r.started_at_ms, f.created_wall_ms + 9);
  EXPECT_EQ(r.finished_at_ms, f.created_wall_ms + 21);

  auto denied = facts(nullptr);
  denied.status = "Denied";
  denied.ended = denied.created + 3ms;
  auto d = make_record(denied);
  EXPECT_EQ(d.cluster_name, "");
  EXPECT_EQ(d.queue_duration_ms, 3); // it waited until it ended
  EXPECT_EQ(d.execution_duration_ms, 0);
  EXPECT_EQ(d.started_at_ms, 0);
}

TEST(query_books, a_slot_given_back_lowers_the_gauge_and_frees_the_cluster) {
  metrics stats;
  cluster_state pg{"pg", "postgres", 1, true};
  auto series = stats.series("g", "pg", "postgres", "postgresWire");
  ASSERT_TRUE(pg.try_acquire());
  slot_taken(stats, *series);
  const std::string gauge = "queryflux_running_queries{cluster_group=\"g\",cluster_name=\"pg\"} ";
  EXPECT_NE(stats.render().find(gauge + "1"), std::string::npos) << stats.render();
  EXPECT_FALSE(pg.try_acquire());
  give_back_slot(stats, *series, pg);
  EXPECT_EQ(pg.running(), 0u);
  EXPECT_NE(stats.render().find(gauge + "0"), std::string::npos) << stats.render();
  EXPECT_TRUE(pg.try_acquire()); // free for the next query
}
