// The control plane's lease table on CAF's deterministic scheduler (no
// threads, virtual time): grants share the cluster's one counter with the
// control plane's own queries, a repeated call is answered as the first,
// a release of slots not held changes nothing, a worker the table does not
// know renews first and is counted as it says, unrenewed leases expire
// after three heartbeat intervals, a waiting acquire gets a freed slot
// (a worker's, or one a control-plane query frees: no clock runs for it),
// no slot is granted during the grace after start, and a call parked in a
// takeover's grace is granted as soon as the last holder renewed.
#include "actors/control/lease_table.hpp"
#include "actors/node/metrics.hpp"
#include "actors/node/node.hpp"
#include "tests/unit/actors/deterministic_test.hpp"

#include <caf/all.hpp>
#include <gtest/gtest.h>

using namespace qf;
using namespace std::chrono_literals;
using worker_api::lease_call;

namespace {

class lease_table_test : public deterministic_test {
protected:
  lease_table_test() {
    auto active = std::make_shared<active_config>();
    pg = std::make_shared<cluster_state>("pg", "postgres", 3, true);
    active->clusters.emplace("pg", pg);
    config::cluster_group g;
    g.name = "g";
    g.members = {"pg"};
    active->group_gates.emplace("g", std::make_shared<group_gate>(g, std::vector{pg}));
    cell->store(active);
  }

  ~lease_table_test() override {
    if (table)
      caf::anon_send_exit(table, caf::exit_reason::user_shutdown);
    sched.run();
  }

  void start(caf::timespan grace = caf::timespan{0}) {
    lease_table_settings s;
    s.cell = cell;
    s.stats = stats;
    s.grace = grace;
    table = sys.spawn(lease_table, s);
    pg->lease_table = caf::actor_cast<caf::actor>(table); // as the node sets it
    sched.run();
  }

  static lease_call call(std::string worker, uint64_t seq, uint32_t count,
                         std::string incarnation = "i1") {
    lease_call c;
    c.worker = std::move(worker);
    c.incarnation = std::move(incarnation);
    c.seq = seq;
    c.heartbeat_interval_secs = 1;
    if (count > 0)
      c.items.push_back({"pg", "g", count});
    return c;
  }

  /// The table's answer to a call, or its error, once the scheduler ran.
  template <class Answer, class Atom>
  reply<Answer> ask(Atom verb, lease_call c) {
    return request<Answer>(table, verb, std::move(c));
  }

  uint32_t granted(const worker_api::acquire_answer& a) {
    uint32_t n = 0;
    for (const auto& g : a.granted)
      n += g.count;
    return n;
  }

  /// An acquire that may wait up to wait_ms for slots: answered, or not
  /// yet, once the scheduler ran.
  reply<worker_api::acquire_answer> acquire_waiting(std::string worker, uint64_t seq,
                                                    uint32_t count, uint32_t wait_ms) {
    auto c = call(std::move(worker), seq, count);
    c.wait_ms = wait_ms;
    return ask<worker_api::acquire_answer>(atom::acquire::value, std::move(c));
  }

  uint32_t acquire(std::string worker, uint64_t seq, uint32_t count, uint32_t wait_ms = 0) {
    auto r = acquire_waiting(std::move(worker), seq, count, wait_ms);
    EXPECT_TRUE(*r && **r) << (*r ? caf::to_string((*r)->error()) : "no answer");
    return *r && **r ? granted(***r) : 0;
  }

  caf::error error_of_release(std::string worker, uint64_t seq, uint32_t count) {
    auto r = ask<worker_api::acquire_answer>(atom::release::value,
                                             call(std::move(worker), seq, count));
    EXPECT_TRUE(*r);
    return *r && !**r ? (*r)->error() : caf::error{};
  }

  void renew(std::string worker, uint64_t seq, uint32_t holding, std::string incarnation = "i1") {
    auto c = call(std::move(worker), seq, 0, std::move(incarnation));
    c.items.push_back({"pg", "", holding});
    auto r = ask<worker_api::acquire_answer>(atom::renew::value, c);
    ASSERT_TRUE(*r && **r);
    EXPECT_EQ((**r)->lease_ttl_secs, 3u); // three intervals of a second
  }

  std::shared_ptr<metrics> stats = std::make_shared<metrics>();
  std::shared_ptr<snapshot_cell> cell = std::make_shared<snapshot_cell>();
  std::shared_ptr<cluster_state> pg;
  lease_table_actor table;
};

} // namespace

TEST_F(lease_table_test, workers_and_the_control_plane_share_one_counter) {
  start();
  renew("a", 1, 0);
  renew("b", 1, 0);
  EXPECT_EQ(acquire("a", 2, 2), 2u);
  EXPECT_EQ(pg->running(), 2u);
  // The control plane's own query takes the last slot...
  EXPECT_TRUE(pg->try_acquire());
  // ...and b is told no, with the fleet's numbers.
  auto r = ask<worker_api::acquire_answer>(atom::acquire::value, call("b", 2, 2));
  ASSERT_TRUE(*r && **r);
  EXPECT_TRUE((**r)->granted.empty());
  ASSERT_EQ((**r)->denied.size(), 1u);
  EXPECT_EQ((**r)->denied[0].running, 3u);
  EXPECT_EQ((**r)->denied[0].max, 3u);
  EXPECT_NE(stats->render().find("queryflux_capacity_lease_denied_total{cluster_group=\"g\"} 1"),
            std::string::npos);
  pg->release();
  EXPECT_EQ(acquire("b", 3, 2), 1u); // partial
}

TEST_F(lease_table_test, a_repeated_call_is_answered_as_the_first_and_not_applied_twice) {
  start();
  renew("a", 1, 0);
  EXPECT_EQ(acquire("a", 2, 2), 2u);
  EXPECT_EQ(acquire("a", 2, 2), 2u); // the answer got lost: asked again
  EXPECT_EQ(pg->running(), 2u);
  EXPECT_FALSE(error_of_release("a", 3, 1));
  EXPECT_FALSE(error_of_release("a", 3, 1)); // repeated
  EXPECT_EQ(pg->running(), 1u);
  // An older call than the last one applied is refused.
  auto r = ask<worker_api::acquire_answer>(atom::acquire::value, call("a", 2, 1));
  ASSERT_TRUE(*r);
  EXPECT_EQ(code_of((*r)->error()), errc::stale_lease_call);
}

TEST_F(lease_table_test, a_release_of_slots_not_held_changes_nothing) {
  start();
  renew("a", 1, 0);
  EXPECT_EQ(acquire("a", 2, 1), 1u);
  EXPECT_EQ(code_of(error_of_release("a", 3, 2)), errc::lease_not_held);
  EXPECT_EQ(pg->running(), 1u);
  EXPECT_EQ(code_of(error_of_release("nobody", 1, 1)), errc::unknown_session);
  // Unknown names are refused whole.
  auto c = call("a", 4, 1);
  c.items[0].group = "nope";
  auto r = ask<worker_api::acquire_answer>(atom::acquire::value, c);
  ASSERT_TRUE(*r);
  EXPECT_EQ(code_of((*r)->error()), errc::bad_lease);
  EXPECT_EQ(pg->running(), 1u);
}

TEST_F(lease_table_test, an_unknown_worker_renews_first_and_is_counted_as_it_says) {
  start();
  auto r = ask<worker_api::acquire_answer>(atom::acquire::value, call("a", 7, 1));
  ASSERT_TRUE(*r);
  EXPECT_EQ(code_of((*r)->error()), errc::unknown_session);
  // After an outage a worker runs five (its own limits): all counted, past
  // the limit, and nobody gets a slot until they are back under it.
  renew("a", 8, 5);
  EXPECT_EQ(pg->running(), 5u);
  renew("b", 1, 0);
  EXPECT_EQ(acquire("b", 2, 1), 0u);
  EXPECT_FALSE(pg->try_acquire());
  renew("a", 9, 2);
  EXPECT_EQ(pg->running(), 2u);
  EXPECT_EQ(acquire("b", 3, 1), 1u);
  // A restarted worker (another incarnation) holds nothing of the last one.
  renew("a", 1, 0, "i2");
  EXPECT_EQ(pg->running(), 1u);
}

TEST_F(lease_table_test, unrenewed_leases_expire_after_three_intervals) {
  start();
  renew("a", 1, 0);
  EXPECT_EQ(acquire("a", 2, 3), 3u);
  sched.advance_time(2s);
  sched.run();
  EXPECT_EQ(pg->running(), 3u);
  sched.advance_time(2s);
  sched.run();
  EXPECT_EQ(pg->running(), 0u);
  auto r = ask<worker_api::acquire_answer>(atom::acquire::value, call("a", 3, 1));
  ASSERT_TRUE(*r);
  EXPECT_EQ(code_of((*r)->error()), errc::unknown_session);
}

TEST_F(lease_table_test, a_waiting_acquire_gets_a_slot_another_worker_gives_back) {
  start();
  renew("a", 1, 0);
  renew("b", 1, 0);
  EXPECT_EQ(acquire("a", 2, 3), 3u);
  auto waiting = acquire_waiting("b", 2, 1, 250);
  EXPECT_FALSE(*waiting); // parked
  EXPECT_FALSE(error_of_release("a", 3, 1));
  ASSERT_TRUE(*waiting && **waiting);
  EXPECT_EQ(granted(***waiting), 1u);
  EXPECT_EQ(pg->running(), 3u);
  // Nothing frees up: the wait ends with a denial.
  auto denied = acquire_waiting("b", 3, 1, 250);
  EXPECT_FALSE(*denied);
  sched.advance_time(300ms);
  sched.run();
  ASSERT_TRUE(*denied && **denied);
  EXPECT_EQ(granted(***denied), 0u);
}

TEST_F(lease_table_test, a_waiting_acquire_gets_the_slot_a_control_plane_query_frees_at_once) {
  start();
  renew("b", 1, 0);
  for (int i = 0; i < 3; ++i) // the control plane's own queries fill the cluster
    ASSERT_TRUE(pg->try_acquire());
  auto waiting = acquire_waiting("b", 2, 1, 30'000);
  EXPECT_FALSE(*waiting); // parked
  sched.run();
  EXPECT_FALSE(*waiting); // nothing looks again by itself ...
  pg->release();          // ... until a slot frees: no virtual time passes
  sched.run();
  ASSERT_TRUE(*waiting && **waiting);
  EXPECT_EQ(granted(***waiting), 1u);
  EXPECT_EQ(pg->running(), 3u);
  // Told once: a later release with nobody waiting sends the table nothing.
  pg->release();
  EXPECT_FALSE(sched.has_job());
}

TEST_F(lease_table_test, a_call_parked_in_a_takeovers_grace_is_granted_once_the_last_holder_renewed) {
  start(10s);
  // The record names a's slot: the grace lasts until a renews.
  caf::anon_send(table, atom::leader::value,
                 lease_takeover{{{"a", "pg", 1, 3, 3000}}, "old-owner"});
  sched.run();
  EXPECT_EQ(pg->running(), 1u);
  renew("b", 1, 0);
  auto waiting = acquire_waiting("b", 2, 1, 1000);
  EXPECT_FALSE(*waiting); // parked: nothing is granted in the grace
  renew("a", 1, 1);       // the last holder the record named
  ASSERT_TRUE(*waiting && **waiting); // no virtual time passed
  EXPECT_EQ(granted(***waiting), 1u);
  EXPECT_EQ(pg->running(), 2u);
}

TEST_F(lease_table_test, no_slot_is_granted_during_the_grace_after_start) {
  start(10s);
  renew("a", 1, 2); // what it held before the restart: counted
  EXPECT_EQ(pg->running(), 2u);
  EXPECT_EQ(acquire("a", 2, 1), 0u);
  sched.advance_time(10s);
  sched.run();
  renew("a", 3, 2);
  EXPECT_EQ(acquire("a", 4, 1), 1u);
}

TEST_F(lease_table_test, a_denial_makes_the_cluster_contended_with_a_fair_share_for_each) {
  start();
  renew("a", 1, 0);
  renew("b", 1, 0);
  EXPECT_EQ(acquire("a", 2, 3), 3u);
  auto r = ask<worker_api::acquire_answer>(atom::acquire::value, call("b", 2, 2));
  ASSERT_TRUE(*r && **r);
  ASSERT_EQ((**r)->contended.size(), 1u);
  EXPECT_EQ((**r)->contended[0].cluster, "pg");
  EXPECT_EQ((**r)->contended[0].slots, 1u); // 3 over the two who want slots, rounded down
  // The holder hears it with its next call, and gives back what is over.
  auto c = call("a", 3, 0);
  c.items.push_back({"pg", "", 3});
  auto news = ask<worker_api::acquire_answer>(atom::renew::value, c);
  ASSERT_TRUE(*news && **news);
  ASSERT_EQ((**news)->contended.size(), 1u);
  EXPECT_EQ((**news)->contended[0].slots, 1u);
  // A second after the last denial nobody waits: not contended.
  sched.advance_time(1500ms);
  sched.run();
  c.seq = 4;
  auto later = ask<worker_api::acquire_answer>(atom::renew::value, c);
  ASSERT_TRUE(*later && **later);
  EXPECT_TRUE((**later)->contended.empty());
}

TEST_F(lease_table_test, a_call_its_fair_share_holds_back_waits_instead_of_being_denied_at_once) {
  start();
  renew("a", 1, 0);
  renew("b", 1, 0);
  EXPECT_EQ(acquire("a", 2, 3), 3u);
  EXPECT_EQ(acquire("b", 2, 2), 0u); // contended now: a share of 1 each
  EXPECT_FALSE(error_of_release("a", 3, 2));
  EXPECT_EQ(pg->running(), 1u);
  // Two slots are free, but a is at its share: its call waits (an answer
  // at once would only bring the same call back at once, and again).
  auto waiting = acquire_waiting("a", 4, 1, 250);
  EXPECT_FALSE(*waiting);
  sched.advance_time(300ms);
  sched.run();
  ASSERT_TRUE(*waiting && **waiting);
  EXPECT_EQ(granted(***waiting), 0u);
}

TEST_F(lease_table_test, a_call_parked_in_the_grace_is_granted_when_the_grace_ends) {
  start(500ms);
  renew("b", 1, 0);
  auto waiting = acquire_waiting("b", 2, 1, 1000);
  EXPECT_FALSE(*waiting);
  sched.advance_time(600ms); // the grace is over, the call's wait is not
  sched.run();
  ASSERT_TRUE(*waiting && **waiting);
  EXPECT_EQ(granted(***waiting), 1u);
}

TEST_F(lease_table_test, past_the_limit_every_holder_hears_a_share_of_0_until_under_it) {
  start();
  // After an outage with localLimits both workers counted what they ran:
  // the fleet is past the limit, and every slot freed must go back rather
  // than to its holder's next waiter.
  renew("a", 1, 3);
  auto past = [&](const std::string& worker, uint64_t seq, uint32_t holding) {
    auto c = call(worker, seq, 0);
    c.items.push_back({"pg", "", holding});
    auto r = ask<worker_api::acquire_answer>(atom::renew::value, c);
    EXPECT_TRUE(*r && **r);
    return *r && **r ? (**r)->contended : std::vector<worker_api::acquire_answer::share>{};
  };
  auto heard = past("b", 1, 3);
  ASSERT_GT(pg->running(), pg->limit);
  ASSERT_EQ(heard.size(), 1u);
  EXPECT_EQ(heard[0].slots, 0u);
  EXPECT_EQ(acquire("b", 2, 1), 0u); // nothing granted past it
  // Back at the limit: no longer 0 (b's denial keeps it contended).
  heard = past("a", 2, 0);
  ASSERT_EQ(pg->running(), pg->limit);
  ASSERT_EQ(heard.size(), 1u);
  EXPECT_GE(heard[0].slots, 1u);
}
