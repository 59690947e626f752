// The worker-mode actors on CAF's deterministic scheduler: no threads,
// virtual time. The config store parks long polls and answers them on a
// change or when their hold runs out; the in-memory registry marks a worker
// gone after three missed heartbeats; backoff stays in its bounds.
#include "actors/control/config_store.hpp"
#include "actors/control/worker_registry.hpp"
#include "actors/node/metrics.hpp"
#include "actors/worker/control_plane_link.hpp"
#include "tests/unit/actors/deterministic_test.hpp"

#include <caf/all.hpp>
#include <gtest/gtest.h>

using namespace qf;
using namespace std::chrono_literals;

namespace {

class worker_actors_test : public deterministic_test {
protected:
  ~worker_actors_test() override {
    for (const auto& hdl : spawned)
      caf::anon_send_exit(hdl, caf::exit_reason::user_shutdown);
    sched.run();
  }

  template <class Handle>
  Handle keep(Handle h) {
    spawned.push_back(caf::actor_cast<caf::actor>(h));
    return h;
  }

  static worker_api::snapshot_content content(const std::string& cluster_json) {
    worker_api::snapshot_content c;
    c.fleet.clusters = {{"c", cluster_json}};
    c.fleet.groups = {{"g", R"({"members":["c"]})"}};
    return c;
  }

  /// A long poll from a client actor; its answer lands in `out`.
  void wait(const config_store_actor& store, std::string since, caf::timespan hold,
            std::shared_ptr<std::optional<snapshot_wait_result>> out) {
    sys.spawn([=](caf::event_based_actor* self) {
      self->request(store, caf::infinite, atom::wait::value, since, hold)
        .then([out](snapshot_wait_result& r) { *out = r; }, [](caf::error&) {});
    });
    sched.run();
  }

  std::shared_ptr<metrics> stats = std::make_shared<metrics>();
  std::vector<caf::actor> spawned;
};

} // namespace

TEST_F(worker_actors_test, a_parked_poll_is_answered_by_a_new_revision_not_by_the_same_one) {
  auto store = keep(sys.spawn(config_store, stats));
  caf::anon_send(store, atom::publish::value, content(R"({"engine":"sqlite"})"));
  sched.run();
  // The first poll (no revision) answers at once.
  auto first = std::make_shared<std::optional<snapshot_wait_result>>();
  wait(store, "", 30s, first);
  ASSERT_TRUE(*first && (*first)->snapshot);
  auto revision = (*first)->snapshot->revision;

  auto parked = std::make_shared<std::optional<snapshot_wait_result>>();
  wait(store, revision, 30s, parked);
  EXPECT_FALSE(*parked);
  // The same config again (a reload that changed nothing) wakes nobody.
  caf::anon_send(store, atom::publish::value, content(R"({"engine":"sqlite"})"));
  sched.run();
  EXPECT_FALSE(*parked);
  caf::anon_send(store, atom::publish::value, content(R"({"engine":"sqlite","poolSize":2})"));
  sched.run();
  ASSERT_TRUE(*parked && (*parked)->snapshot);
  EXPECT_NE((*parked)->snapshot->revision, revision);
  // One serialization shared by every answer.
  auto other = std::make_shared<std::optional<snapshot_wait_result>>();
  wait(store, revision, 30s, other);
  ASSERT_TRUE(*other && (*other)->snapshot);
  EXPECT_EQ((*other)->snapshot->body.get(), (*parked)->snapshot->body.get());
}

TEST_F(worker_actors_test, a_poll_whose_hold_runs_out_is_answered_with_no_snapshot) {
  auto store = keep(sys.spawn(config_store, stats));
  caf::anon_send(store, atom::publish::value, content(R"({"engine":"sqlite"})"));
  sched.run();
  auto first = std::make_shared<std::optional<snapshot_wait_result>>();
  wait(store, "", 30s, first);
  auto parked = std::make_shared<std::optional<snapshot_wait_result>>();
  wait(store, (*first)->snapshot->revision, 30s, parked);
  sched.advance_time(29s);
  sched.run();
  EXPECT_FALSE(*parked);
  sched.advance_time(2s + 30s / 16); // the hold and at most its jitter
  sched.run();
  ASSERT_TRUE(*parked);
  EXPECT_FALSE((*parked)->snapshot); // 304
}

TEST_F(worker_actors_test, before_its_first_config_the_store_has_nothing_to_serve) {
  auto store = keep(sys.spawn(config_store, stats));
  std::optional<caf::error> failed;
  sys.spawn([&, store](caf::event_based_actor* self) {
    self->request(store, caf::infinite, atom::get::value)
      .then([](served_snapshot&) {}, [&](caf::error& err) { failed = err; });
  });
  sched.run();
  ASSERT_TRUE(failed);
  EXPECT_EQ(code_of(*failed), errc::not_configured);
}

TEST_F(worker_actors_test, a_worker_that_misses_three_heartbeats_is_gone) {
  auto registry = keep(sys.spawn(worker_registry, registry_store_actor{}));
  worker_api::worker_report r;
  r.name = "w1";
  r.version = "1";
  r.heartbeat_interval_secs = 10;
  caf::anon_send(registry, atom::enroll::value, r);
  sched.run();
  auto status = [&] {
    std::string out;
    sys.spawn([&, registry](caf::event_based_actor* self) {
      self->request(registry, caf::infinite, atom::get::value, std::string{"w1"})
        .then([&](worker_entry& e) { out = e.status; }, [](caf::error&) {});
    });
    sched.run();
    return out;
  };
  EXPECT_EQ(status(), "active");
  for (int i = 0; i < 29; ++i) { // 29 s: not three whole intervals yet
    sched.advance_time(1s);
    sched.run();
  }
  EXPECT_EQ(status(), "active");
  caf::anon_send(registry, atom::heartbeat::value, r); // heard again: the count restarts
  sched.run();
  for (int i = 0; i < 29; ++i) {
    sched.advance_time(1s);
    sched.run();
  }
  EXPECT_EQ(status(), "active");
  r.status = "draining";
  caf::anon_send(registry, atom::heartbeat::value, r);
  sched.run();
  EXPECT_EQ(status(), "draining");
  for (int i = 0; i < 32; ++i) {
    sched.advance_time(1s);
    sched.run();
  }
  EXPECT_EQ(status(), "gone");
}

TEST(control_plane_link, backoff_is_full_jitter_capped_at_a_minute) {
  std::mt19937 rng{42};
  for (uint32_t failures = 1; failures < 20; ++failures) {
    auto ceiling = std::min<caf::timespan>(60s, 1s * (1 << std::min(failures, 6u)));
    caf::timespan longest{0};
    for (int i = 0; i < 2000; ++i) {
      auto d = backoff_delay(failures, rng);
      ASSERT_GE(d, caf::timespan{0});
      ASSERT_LT(d, ceiling);
      longest = std::max(longest, d);
    }
    // Spread over the whole range, not stuck near its bottom.
    EXPECT_GT(longest, ceiling * 9 / 10) << failures;
  }
}
