// Group admission and queueing on CAF's deterministic scheduler: no threads,
// virtual time.
#include "actors/data/group.hpp"

#include "actors/node/metrics.hpp"
#include "tests/unit/actors/deterministic_test.hpp"

#include <caf/all.hpp>
#include <gtest/gtest.h>

using namespace qf;
using namespace std::chrono_literals;

namespace {

class group_test : public deterministic_test {
protected:
  ~group_test() override {
    for (auto& c : clusters)
      c->set_groups({});
    for (const auto& hdl : spawned)
      caf::anon_send_exit(hdl, caf::exit_reason::user_shutdown);
    sched.run();
  }

  std::shared_ptr<cluster_state> cluster(const std::string& name,
                                         uint32_t limit,
                                         health h = health::healthy) {
    auto c = std::make_shared<cluster_state>(name, "duckDb", limit, true);
    c->status = h;
    clusters.push_back(c);
    return c;
  }

  caf::actor group(const std::string& name,
                   std::vector<std::shared_ptr<cluster_state>> members,
                   uint32_t max_queued = 10,
                   std::chrono::seconds wait = 30s,
                   config::strategy_kind strategy
                   = config::strategy_kind::round_robin) {
    config::cluster_group g;
    g.name = name;
    g.max_queued_queries = max_queued;
    g.capacity_wait_timeout = wait;
    g.strategy = strategy;
    for (auto& m : members)
      g.members.push_back(m->name);
    auto gate = std::make_shared<group_gate>(g, members, stats);
    gates[name] = gate;
    auto hdl = sys.spawn(group_actor, gate, stats);
    for (auto& m : members)
      m->add_group({hdl, gate->queued(), gate});
    spawned.push_back(hdl);
    sched.run();
    return hdl;
  }

  /// Asks for admission from a client actor (on member `only`, if given);
  /// its outcome lands in outcomes.
  void admit(const caf::actor& g, uint64_t ticket, std::string only = {}) {
    auto out = outcomes;
    sys.spawn([=](caf::event_based_actor* self) {
      auto asked = only.empty()
                     ? self->request(g, caf::infinite, atom::admit::value, ticket)
                     : self->request(g, caf::infinite, atom::admit::value, ticket, only);
      std::move(asked)
        .then([=](admission& a) { (*out)[ticket] = a.cluster->name; },
              [=](caf::error& e) {
                auto code = code_of(e);
                (*out)[ticket] = code == errc::queue_full      ? "queue_full"
                                 : code == errc::queue_timeout ? "timeout"
                                 : code == errc::cancelled     ? "cancelled"
                                 : code == errc::group_disabled
                                   ? "disabled"
                                   : "error";
              });
    });
    sched.run();
  }

  std::string outcome(uint64_t ticket) const {
    auto i = outcomes->find(ticket);
    return i == outcomes->end() ? "waiting" : i->second;
  }

  uint64_t queued(const caf::actor& g) {
    uint64_t n = 0;
    caf::scoped_actor self{sys};
    self->send(g, atom::stats::value);
    sched.run();
    self->receive([&](uint64_t x) { n = x; });
    return n;
  }

  void release(const std::shared_ptr<cluster_state>& c) {
    c->release();
    sched.run();
  }

  std::shared_ptr<metrics> stats = std::make_shared<metrics>();
  std::shared_ptr<std::map<uint64_t, std::string>> outcomes
    = std::make_shared<std::map<uint64_t, std::string>>();
  std::vector<std::shared_ptr<cluster_state>> clusters;
  std::vector<caf::actor> spawned;
  std::map<std::string, std::shared_ptr<group_gate>> gates;

  /// A wire statement waiting in g's lane: what it was handed lands in
  /// lane_outcomes ("closed" for null), in the order handed.
  bool wait_in_lane(const std::string& g, uint64_t ticket, std::string only = {}) {
    group_gate::lane_waiter w;
    w.ticket = ticket;
    w.only = std::move(only);
    w.admit = [out = lane_outcomes, ticket](std::shared_ptr<cluster_state> slot) {
      out->emplace_back(ticket, slot ? slot->name : "closed");
    };
    return gates.at(g)->wait_in_lane(w);
  }
  std::shared_ptr<std::vector<std::pair<uint64_t, std::string>>> lane_outcomes
    = std::make_shared<std::vector<std::pair<uint64_t, std::string>>>();
};

} // namespace

TEST_F(group_test, admits_up_to_the_limit_then_queues_fifo) {
  auto c = cluster("c1", 2);
  auto g = group("g", {c});
  for (uint64_t t = 1; t <= 5; ++t)
    admit(g, t);
  EXPECT_EQ(outcome(1), "c1");
  EXPECT_EQ(outcome(2), "c1");
  EXPECT_EQ(outcome(3), "waiting");
  EXPECT_EQ(c->running(), 2u);
  EXPECT_EQ(queued(g), 3u);
  release(c);
  EXPECT_EQ(outcome(3), "c1"); // the oldest waiter goes first
  EXPECT_EQ(outcome(4), "waiting");
  EXPECT_EQ(c->running(), 2u);
  release(c);
  release(c);
  EXPECT_EQ(outcome(4), "c1");
  EXPECT_EQ(outcome(5), "c1");
  EXPECT_EQ(queued(g), 0u);
  EXPECT_EQ(c->running(), 2u);
}

TEST_F(group_test, a_full_queue_rejects_at_once_and_counts_it) {
  auto c = cluster("c1", 1);
  auto g = group("g", {c}, /*max_queued=*/1);
  admit(g, 1);
  admit(g, 2);
  admit(g, 3);
  EXPECT_EQ(outcome(1), "c1");
  EXPECT_EQ(outcome(2), "waiting");
  EXPECT_EQ(outcome(3), "queue_full");
  EXPECT_NE(stats->render().find(
              "queryflux_queue_rejections_total{cluster_group=\"g\"} 1"),
            std::string::npos);
}

TEST_F(group_test, a_waiter_times_out_after_the_capacity_wait) {
  auto c = cluster("c1", 1);
  auto g = group("g", {c}, 10, 5s);
  admit(g, 1);
  admit(g, 2);
  sched.advance_time(4s);
  sched.run();
  EXPECT_EQ(outcome(2), "waiting");
  sched.advance_time(2s);
  sched.run();
  EXPECT_EQ(outcome(2), "timeout");
  EXPECT_EQ(queued(g), 0u);
  // The timed-out ticket does not take the slot freed later.
  admit(g, 3);
  release(c);
  EXPECT_EQ(outcome(3), "c1");
}

TEST_F(group_test, a_withdrawn_waiter_fails_cancelled_and_leaves_the_queue) {
  auto c = cluster("c1", 1);
  auto g = group("g", {c});
  admit(g, 1);
  admit(g, 2);
  admit(g, 3);
  caf::anon_send(g, atom::withdraw::value, uint64_t{2});
  sched.run();
  EXPECT_EQ(outcome(2), "cancelled");
  release(c);
  EXPECT_EQ(outcome(3), "c1");
}

TEST_F(group_test, only_healthy_members_get_queries) {
  auto sick = cluster("sick", 5, health::unhealthy);
  auto pending = cluster("pending", 5, health::pending);
  auto g = group("g", {sick, pending});
  admit(g, 1);
  EXPECT_EQ(outcome(1), "waiting");
  // The health check marks it HEALTHY and tells the groups.
  pending->status = health::healthy;
  pending->notify_groups();
  sched.run();
  EXPECT_EQ(outcome(1), "pending");
  EXPECT_EQ(sick->running(), 0u);
}

TEST_F(group_test, disabled_members_get_no_queries) {
  auto off = cluster("off", 5);
  off->enabled = false;
  auto on = cluster("on", 5);
  auto g = group("g", {off, on});
  for (uint64_t t = 1; t <= 4; ++t)
    admit(g, t);
  for (uint64_t t = 1; t <= 4; ++t)
    EXPECT_EQ(outcome(t), "on");
}

TEST_F(group_test, a_cluster_shared_by_two_groups_never_exceeds_its_limit) {
  auto c = cluster("shared", 2);
  auto g1 = group("g1", {c});
  auto g2 = group("g2", {c});
  admit(g1, 1);
  admit(g2, 2);
  admit(g2, 3);
  admit(g1, 4);
  EXPECT_EQ(c->running(), 2u);
  EXPECT_EQ(outcome(3), "waiting");
  EXPECT_EQ(outcome(4), "waiting");
  release(c); // both groups hear of the free slot; exactly one wins it
  EXPECT_EQ(c->running(), 2u);
  auto admitted = (outcome(3) == "shared") + (outcome(4) == "shared");
  EXPECT_EQ(admitted, 1);
}

TEST_F(group_test, round_robin_spreads_over_members) {
  auto a = cluster("a", 10);
  auto b = cluster("b", 10);
  auto g = group("g", {a, b});
  for (uint64_t t = 1; t <= 4; ++t)
    admit(g, t);
  EXPECT_EQ(outcome(1), "a");
  EXPECT_EQ(outcome(2), "b");
  EXPECT_EQ(outcome(3), "a");
  EXPECT_EQ(outcome(4), "b");
}

TEST_F(group_test, least_loaded_prefers_the_idle_member) {
  auto a = cluster("a", 10);
  auto b = cluster("b", 10);
  a->running_counter()->force_take(3);
  auto g = group("g", {a, b}, 10, 30s, config::strategy_kind::least_loaded);
  admit(g, 1);
  admit(g, 2);
  EXPECT_EQ(outcome(1), "b");
  EXPECT_EQ(outcome(2), "b");
}

TEST_F(group_test, a_full_member_is_skipped_for_one_with_room) {
  auto a = cluster("a", 1);
  auto b = cluster("b", 1);
  auto g = group("g", {a, b}, 10, 30s, config::strategy_kind::failover);
  admit(g, 1);
  admit(g, 2);
  admit(g, 3);
  EXPECT_EQ(outcome(1), "a");
  EXPECT_EQ(outcome(2), "b");
  EXPECT_EQ(outcome(3), "waiting");
}

TEST_F(group_test, queue_length_is_published_as_a_metric) {
  auto c = cluster("c1", 1);
  auto g = group("g", {c});
  admit(g, 1);
  admit(g, 2);
  admit(g, 3);
  EXPECT_NE(stats->render().find(
              "queryflux_queued_queries{cluster_group=\"g\"} 2"),
            std::string::npos)
    << stats->render();
}

TEST_F(group_test, a_replaced_group_hands_its_waiters_and_latecomers_to_its_successor_in_order) {
  auto c = cluster("c1", 1);
  auto old = group("g", {c});
  for (uint64_t t = 1; t <= 3; ++t)
    admit(old, t);
  EXPECT_EQ(outcome(1), "c1");
  auto next = group("g", {c});
  caf::anon_send(old, atom::retire::value, next);
  sched.run();
  EXPECT_EQ(queued(old), 0u);
  EXPECT_EQ(queued(next), 2u);
  admit(old, 4); // read the old config: passed on, behind the others
  EXPECT_EQ(queued(next), 3u);
  release(c);
  EXPECT_EQ(outcome(2), "c1");
  EXPECT_EQ(outcome(3), "waiting");
  release(c);
  EXPECT_EQ(outcome(3), "c1");
  release(c);
  EXPECT_EQ(outcome(4), "c1");
}

TEST_F(group_test, a_deleted_group_fails_its_waiters_and_latecomers) {
  auto c = cluster("c1", 1);
  auto g = group("g", {c});
  admit(g, 1);
  admit(g, 2);
  caf::anon_send(g, atom::retire::value, caf::actor{});
  sched.run();
  EXPECT_EQ(outcome(1), "c1");
  EXPECT_EQ(outcome(2), "disabled");
  admit(g, 3);
  EXPECT_EQ(outcome(3), "disabled");
}

TEST_F(group_test, a_waiter_for_one_member_gets_that_member_and_holds_up_nobody) {
  auto c1 = cluster("c1", 1);
  auto c2 = cluster("c2", 1);
  auto g = group("g", {c1, c2});
  admit(g, 1, "c1");
  EXPECT_EQ(outcome(1), "c1");
  admit(g, 2, "c1"); // its member is full, the other one is not
  EXPECT_EQ(outcome(2), "waiting");
  EXPECT_EQ(c2->running(), 0u);
  admit(g, 3); // anyone's: past the waiter, onto the free member
  EXPECT_EQ(outcome(3), "c2");
  admit(g, 4);
  EXPECT_EQ(outcome(4), "waiting");
  release(c2); // the first waiter wants c1: the second one goes
  EXPECT_EQ(outcome(2), "waiting");
  EXPECT_EQ(outcome(4), "c2");
  release(c1);
  EXPECT_EQ(outcome(2), "c1");
  EXPECT_EQ(queued(g), 0u);
}

TEST_F(group_test, a_waiter_for_a_member_that_is_not_healthy_waits_for_it) {
  auto c1 = cluster("c1", 1, health::unhealthy);
  auto c2 = cluster("c2", 1);
  auto g = group("g", {c1, c2}, 10, 1s);
  admit(g, 1, "c1");
  admit(g, 2, "nowhere");
  EXPECT_EQ(outcome(1), "waiting");
  EXPECT_EQ(c2->running(), 0u);
  c1->status = health::healthy;
  c1->notify_groups();
  sched.run();
  EXPECT_EQ(outcome(1), "c1");
  sched.advance_time(2s);
  sched.run();
  EXPECT_EQ(outcome(2), "timeout");
}

TEST_F(group_test, a_cluster_pins_at_most_max_pinned_connections_and_a_dropped_pin_frees_one) {
  auto c = cluster("c1", 4);
  c->max_pinned = 2;
  auto first = c->try_pin();
  auto second = c->try_pin();
  ASSERT_TRUE(first && second);
  EXPECT_FALSE(c->try_pin());
  EXPECT_EQ(c->pinned(), 2u);
  first.reset();
  EXPECT_EQ(c->pinned(), 1u);
  EXPECT_TRUE(c->try_pin()); // taken and dropped at once
  EXPECT_EQ(c->pinned(), 1u);
}

TEST_F(group_test, the_lane_is_served_in_order_by_whoever_frees_a_slot_and_nobody_overtakes_it) {
  auto c = cluster("c1", 1);
  auto g = group("g", {c});
  auto gate = gates.at("g");
  admit(g, 1);
  ASSERT_EQ(outcome(1), "c1");
  ASSERT_TRUE(wait_in_lane("g", 2));
  ASSERT_TRUE(wait_in_lane("g", 3));
  EXPECT_EQ(gate->queued()->load(), 2u);
  EXPECT_NE(stats->render().find("queryflux_queued_queries{cluster_group=\"g\"} 2"),
            std::string::npos);
  // A statement of the actor path queues behind them.
  admit(g, 4);
  EXPECT_EQ(outcome(4), "waiting");
  EXPECT_EQ(gate->queued()->load(), 3u);
  // With it waiting there, a wire statement waits there too.
  EXPECT_FALSE(wait_in_lane("g", 5));
  // The releasing thread hands the slot over itself: no message needed.
  c->release();
  using handed = std::vector<std::pair<uint64_t, std::string>>;
  EXPECT_EQ(*lane_outcomes, (handed{{2, "c1"}}));
  sched.run();
  EXPECT_EQ(outcome(4), "waiting"); // 3 came first
  release(c);
  EXPECT_EQ(*lane_outcomes, (handed{{2, "c1"}, {3, "c1"}}));
  EXPECT_EQ(outcome(4), "waiting");
  release(c);
  EXPECT_EQ(outcome(4), "c1");
  EXPECT_EQ(gate->queued()->load(), 0u);
}

TEST_F(group_test, a_lane_waiter_leaves_until_handed_a_slot_counts_toward_the_queue_and_hears_a_replacement) {
  auto c = cluster("c1", 1);
  auto g = group("g", {c}, /*max_queued=*/2);
  auto gate = gates.at("g");
  admit(g, 1);
  ASSERT_TRUE(wait_in_lane("g", 2));
  ASSERT_TRUE(wait_in_lane("g", 3));
  // Full: neither the lane nor the actor takes another.
  EXPECT_FALSE(wait_in_lane("g", 4));
  admit(g, 5);
  EXPECT_EQ(outcome(5), "queue_full");
  EXPECT_TRUE(gate->leave_lane(2));
  EXPECT_FALSE(gate->leave_lane(2));
  release(c);
  using handed = std::vector<std::pair<uint64_t, std::string>>;
  EXPECT_EQ(*lane_outcomes, (handed{{3, "c1"}}));
  EXPECT_FALSE(gate->leave_lane(3)); // handed already: its admit took it
  ASSERT_TRUE(wait_in_lane("g", 6));
  // The group replaced (a config change): its lane's waiters are told.
  caf::anon_send(g, atom::retire::value, caf::actor{});
  sched.run();
  EXPECT_EQ(*lane_outcomes, (handed{{3, "c1"}, {6, "closed"}}));
  EXPECT_FALSE(wait_in_lane("g", 7));
}

TEST_F(group_test, a_lane_waiter_for_one_member_lets_those_behind_it_go) {
  auto a = cluster("a", 1);
  auto b = cluster("b", 1);
  auto g = group("g", {a, b});
  admit(g, 1);
  admit(g, 2);
  ASSERT_TRUE(wait_in_lane("g", 3, "a"));
  ASSERT_TRUE(wait_in_lane("g", 4));
  release(b);
  using handed = std::vector<std::pair<uint64_t, std::string>>;
  EXPECT_EQ(*lane_outcomes, (handed{{4, "b"}}));
  release(a);
  EXPECT_EQ(*lane_outcomes, (handed{{4, "b"}, {3, "a"}}));
}
