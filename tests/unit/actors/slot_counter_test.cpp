// The slot counter of a node that shares its clusters' limits: admission
// under both the limit and the grant, and a grant above the fair-share cap
// coming down with each slot given back, in the same atomic step.
#include "actors/data/slot_counter.hpp"

#include <gtest/gtest.h>

using qf::slot_counter;

TEST(slot_counter, admits_under_both_the_limit_and_the_grant) {
  slot_counter c;
  c.set_grant(2);
  EXPECT_EQ(c.try_take(4), slot_counter::outcome::taken);
  EXPECT_EQ(c.try_take(4), slot_counter::outcome::taken);
  EXPECT_EQ(c.try_take(4), slot_counter::outcome::needs_grant);
  c.raise_grant(5);
  EXPECT_EQ(c.try_take(4), slot_counter::outcome::taken);
  EXPECT_EQ(c.try_take(4), slot_counter::outcome::taken);
  EXPECT_EQ(c.try_take(4), slot_counter::outcome::full);
}

TEST(slot_counter, a_slot_given_back_over_the_cap_lowers_the_grant_with_it) {
  slot_counter c;
  c.set_grant(4);
  for (int i = 0; i < 4; ++i)
    ASSERT_EQ(c.try_take(8), slot_counter::outcome::taken);
  c.set_cap(2);
  c.give(1); // 3 run: the grant follows down to them
  EXPECT_EQ(c.granted(), 3u);
  EXPECT_EQ(c.try_take(8), slot_counter::outcome::needs_grant); // the next query asks
  c.give(2); // 1 runs: the grant stops at the cap
  EXPECT_EQ(c.running(), 1u);
  EXPECT_EQ(c.granted(), 2u);
  c.set_cap(slot_counter::unbounded);
  c.give(1); // no cap: the grant stays for the node's next query
  EXPECT_EQ(c.granted(), 2u);
  EXPECT_EQ(c.try_take(8), slot_counter::outcome::taken);
}

TEST(slot_counter, an_unbounded_grant_ignores_the_cap) {
  slot_counter c;
  c.set_cap(1);
  ASSERT_EQ(c.try_take(8), slot_counter::outcome::taken);
  ASSERT_EQ(c.try_take(8), slot_counter::outcome::taken);
  c.give(2);
  EXPECT_EQ(c.granted(), slot_counter::unbounded);
  EXPECT_EQ(c.running(), 0u);
}
