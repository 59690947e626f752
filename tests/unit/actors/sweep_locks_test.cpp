// The sweep locks a lease table keeps: one holder at a time, a TTL that its
// holder renews and nobody else can, fencing tokens that only grow, and
// counts stored only from the current holder and only for known clusters.
// The clock is the test's.
#include "actors/control/sweep_locks.hpp"

#include <gtest/gtest.h>

using namespace std::chrono_literals;
using qf::sweep_locks;
using qf::worker_api::engine_count;
using qf::worker_api::sweep_answer;
using qf::worker_api::sweep_call;

namespace {

sweep_call call(std::string holder, uint64_t token = 0, uint32_t ttl = 3) {
  sweep_call c;
  c.name = "engine-reconcile";
  c.holder = std::move(holder);
  c.token = token;
  c.ttl_secs = ttl;
  return c;
}

const std::set<std::string> known{"pg-1", "trino-1"};

} // namespace

TEST(sweep_locks, one_holder_at_a_time_until_its_ttl_ends) {
  sweep_locks locks{100};
  sweep_locks::time_point t0{};
  auto a = locks.acquire(call("w1"), t0);
  EXPECT_TRUE(a.granted);
  EXPECT_EQ(a.holder, "w1");
  EXPECT_EQ(a.token, 100u);
  EXPECT_EQ(a.expires_in_ms, 3000u);

  auto b = locks.acquire(call("w2"), t0 + 2s);
  EXPECT_FALSE(b.granted);
  EXPECT_EQ(b.holder, "w1");
  EXPECT_EQ(b.expires_in_ms, 1000u);

  auto c = locks.acquire(call("w2"), t0 + 3s);
  EXPECT_TRUE(c.granted);
  EXPECT_EQ(c.holder, "w2");
  EXPECT_GT(c.token, a.token);
}

TEST(sweep_locks, the_holder_renews_with_its_token_and_after_expiry_gets_a_new_one) {
  sweep_locks locks{1};
  sweep_locks::time_point t0{};
  auto first = locks.acquire(call("w1"), t0);
  auto renewed = locks.acquire(call("w1"), t0 + 2s);
  EXPECT_TRUE(renewed.granted);
  EXPECT_EQ(renewed.token, first.token);
  EXPECT_EQ(renewed.expires_in_ms, 3000u);
  EXPECT_FALSE(locks.acquire(call("w2"), t0 + 4s).granted); // renewed to 5 s

  auto again = locks.acquire(call("w1"), t0 + 9s); // expired meanwhile
  EXPECT_TRUE(again.granted);
  EXPECT_GT(again.token, first.token);
  // The old token is fenced off.
  auto stale = call("w1", first.token);
  EXPECT_TRUE(std::holds_alternative<sweep_locks::not_held>(locks.release(stale, t0 + 9s)));
}

TEST(sweep_locks, only_the_current_holder_publishes_and_only_known_clusters) {
  sweep_locks locks{1};
  sweep_locks::time_point t0{};
  auto grant = locks.acquire(call("w1"), t0);

  auto intruder = call("w2", grant.token);
  intruder.counts = {{"pg-1", 99, {}, 0}};
  EXPECT_TRUE(std::holds_alternative<sweep_locks::not_held>(
    locks.publish(intruder, known, t0 + 1s)));

  auto mine = call("w1", grant.token);
  mine.counts = {{"pg-1", 4, {}, 0}, {"gone", 7, {}, 0}};
  auto published = locks.publish(mine, known, t0 + 1s);
  ASSERT_TRUE(std::holds_alternative<sweep_answer>(published));
  auto want = std::vector<engine_count>{{"pg-1", 4, "w1", 0}};
  EXPECT_EQ(std::get<sweep_answer>(published).counts, want);

  auto read = locks.counts("engine-reconcile", t0 + 3s);
  want[0].age_ms = 2000;
  EXPECT_EQ(read.counts, want);
  EXPECT_TRUE(locks.counts("another-lock", t0 + 3s).counts.empty());

  // After the lock expired its holder can no longer publish ...
  EXPECT_TRUE(std::holds_alternative<sweep_locks::not_held>(
    locks.publish(mine, known, t0 + 4s)));
  // ... and what it published is forgotten after forget_after.
  EXPECT_EQ(locks.counts("engine-reconcile", t0 + 1s + sweep_locks::forget_after).counts.size(),
            1u);
  EXPECT_TRUE(
    locks.counts("engine-reconcile", t0 + 2s + sweep_locks::forget_after).counts.empty());
}

TEST(sweep_locks, a_release_frees_the_lock_for_the_next_node_at_once) {
  sweep_locks locks{1};
  sweep_locks::time_point t0{};
  auto grant = locks.acquire(call("w1"), t0);
  EXPECT_TRUE(std::holds_alternative<sweep_locks::not_held>(
    locks.release(call("w2", grant.token), t0)));
  EXPECT_TRUE(std::holds_alternative<sweep_answer>(locks.release(call("w1", grant.token), t0)));
  EXPECT_TRUE(std::holds_alternative<sweep_locks::not_held>(
    locks.release(call("w1", grant.token), t0))); // twice: no longer held
  auto next = locks.acquire(call("w2"), t0);
  EXPECT_TRUE(next.granted);
  EXPECT_GT(next.token, grant.token);
}
