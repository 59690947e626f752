// Cluster selection strategies over eligible members.
#include "actors/routing/strategy.hpp"

#include <gtest/gtest.h>

#include <map>

using namespace qf;
using config::strategy_kind;
using routing::member_view;

TEST(strategy, nobody_eligible_means_no_pick) {
  routing::strategy_state st;
  std::vector<member_view> members{{false, 0}, {false, 0}};
  for (auto k : {strategy_kind::round_robin, strategy_kind::least_loaded,
                 strategy_kind::random, strategy_kind::failover,
                 strategy_kind::query_count_based})
    EXPECT_FALSE(routing::pick(k, members, st));
  EXPECT_FALSE(routing::pick(strategy_kind::round_robin, {}, st));
}

TEST(strategy, round_robin_cycles_and_skips_ineligible) {
  routing::strategy_state st;
  std::vector<member_view> members{{true, 0}, {false, 0}, {true, 0}};
  std::vector<size_t> picks;
  for (int i = 0; i < 4; ++i)
    picks.push_back(*routing::pick(strategy_kind::round_robin, members, st));
  EXPECT_EQ(picks, (std::vector<size_t>{0, 2, 0, 2}));
}

TEST(strategy, least_loaded_takes_the_fewest_running) {
  routing::strategy_state st;
  std::vector<member_view> members{{true, 5}, {true, 2}, {false, 0}, {true, 3}};
  EXPECT_EQ(routing::pick(strategy_kind::least_loaded, members, st), 1u);
}

TEST(strategy, failover_takes_the_first_eligible_in_member_order) {
  routing::strategy_state st;
  std::vector<member_view> members{{false, 0}, {true, 9}, {true, 0}};
  EXPECT_EQ(routing::pick(strategy_kind::failover, members, st), 1u);
}

TEST(strategy, random_spreads_over_eligible_members_only) {
  routing::strategy_state st;
  std::vector<member_view> members{{true, 0}, {false, 0}, {true, 0}};
  std::map<size_t, int> seen;
  for (int i = 0; i < 400; ++i)
    ++seen[*routing::pick(strategy_kind::random, members, st)];
  EXPECT_EQ(seen.count(1), 0u);
  EXPECT_GT(seen[0], 100);
  EXPECT_GT(seen[2], 100);
}

TEST(strategy, query_count_based_weighs_the_users_queue_then_the_queue_then_running) {
  routing::strategy_state st;
  auto m = [](bool eligible, uint32_t running, uint32_t queued, uint32_t user_queued) {
    return member_view{eligible, running, queued, user_queued};
  };
  // The user queues less on the second, though it is busier.
  EXPECT_EQ(routing::pick(strategy_kind::query_count_based,
                          {m(true, 0, 0, 3), m(true, 9, 9, 1)}, st),
            1u);
  // The same for the user: the shorter queue.
  EXPECT_EQ(routing::pick(strategy_kind::query_count_based,
                          {m(true, 0, 5, 0), m(true, 9, 2, 0)}, st),
            1u);
  // The same queues: the fewest running.
  EXPECT_EQ(routing::pick(strategy_kind::query_count_based,
                          {m(true, 4, 2, 0), m(true, 3, 2, 0), m(true, 5, 2, 0)}, st),
            1u);
  // Never one that is not eligible, however idle.
  EXPECT_EQ(routing::pick(strategy_kind::query_count_based,
                          {m(false, 0, 0, 0), m(true, 9, 9, 9)}, st),
            1u);
  EXPECT_FALSE(routing::pick(strategy_kind::query_count_based, {m(false, 0, 0, 0)}, st));
}
