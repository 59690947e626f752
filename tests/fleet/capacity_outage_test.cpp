// Shared capacity when the control plane goes away, or one worker's link
// to it: with failClosed the limit holds (running queries finish, new ones
// wait and run once it is back); with localLimits workers admit on their
// own limits, and once it is back they tell it what they run and nobody is
// admitted past the shared limit until the fleet is under it; a cut link
// neither loses nor doubles a lease.
#include "tests/fleet/capacity_support.hpp"

#include <gtest/gtest.h>

using namespace qf;
using namespace qf::test_support;

namespace {

/// Queries waiting in group g on worker i.
double queued_on(fleet& f, size_t i) {
  return metric_value("127.0.0.1", f.worker(i).admin_port(),
                      "queryflux_queued_queries{cluster_group=\"g\"}");
}

std::string coordination_state(fleet& f, size_t i) {
  auto s = f.status(i);
  return s.contains("coordination") ? s["coordination"].value("state", "") : "";
}

uint32_t in_workers(fleet& f) {
  uint32_t n = 0;
  for (size_t i = 0; i < f.size(); ++i)
    n += running_on(f, i);
  return n;
}

/// The control plane's own count on pg: its queries and every lease.
uint32_t counted_by_control_plane(fleet& f) {
  auto active = f.control_plane().services()->snapshot->load();
  return active ? active->clusters.at("pg")->running() : 0;
}

control_plane_options with_grace(std::string fleet_yaml, std::string url) {
  control_plane_options o{std::move(fleet_yaml), std::move(url), ""};
  // A restarted control plane grants nothing before the workers (renewing
  // every second) told it what they hold.
  o.lease_grace = std::chrono::seconds(3);
  return o;
}

} // namespace

TEST_F(fleet_test, fail_closed_keeps_the_limit_while_the_control_plane_is_down) {
  fleet f{with_grace(postgres_fleet(url, 2), url)};
  f.add_worker(sharing_worker("a"));
  f.add_worker(sharing_worker("b"));
  ASSERT_TRUE(eventually([&] { return all_run(f, f.served_revision()); }));
  sampler engine{engine_count(url)};
  sampler workers{[&] { return in_workers(f); }};
  // a fills the limit; its queries outlive the control plane.
  std::vector<std::jthread> running;
  std::atomic<int> finished{0};
  for (int i = 0; i < 2; ++i)
    running.emplace_back([&] {
      EXPECT_EQ(pg_once(f.worker(0).postgres_port(), "SELECT pg_sleep(2)"), "");
      ++finished;
    });
  ASSERT_TRUE(eventually([&] { return leases_of(f, "a").value("pg", 0) == 2; }));
  f.stop_control_plane();
  // b's query waits: nothing is granted without the control plane.
  std::atomic<bool> b_done{false};
  std::jthread waiting{[&] {
    EXPECT_EQ(trino_once(f.worker(1).trino_port(), "SELECT pg_sleep(0.1)"), "");
    b_done = true;
  }};
  ASSERT_TRUE(eventually([&] { return queued_on(f, 1) == 1; }));
  // a's queries finish; b still waits, however long the outage lasts: its
  // leases (none) cannot be confirmed.
  ASSERT_TRUE(eventually([&] { return finished.load() == 2; }));
  ASSERT_TRUE(eventually([&] {
    return metric_value("127.0.0.1", f.worker(1).admin_port(),
                        "queryflux_coordination_failures_total{operation=\"acquire\"}")
           + metric_value("127.0.0.1", f.worker(1).admin_port(),
                          "queryflux_coordination_failures_total{operation=\"renew\"}")
           >= 2;
  }));
  EXPECT_FALSE(b_done.load());
  EXPECT_EQ(queued_on(f, 1), 1);
  f.start_control_plane();
  waiting.join();
  for (auto& t : running)
    t.join();
  EXPECT_TRUE(b_done.load());
  engine.stop();
  workers.stop();
  EXPECT_LE(engine.max(), 2u);
  EXPECT_LE(workers.max(), 2u);
  // All given back, on both sides.
  EXPECT_TRUE(eventually([&] {
    return counted_by_control_plane(f) == 0 && leases_of(f, "a").value("pg", 0) == 0
           && leases_of(f, "b").value("pg", 0) == 0;
  }));
}

TEST_F(fleet_test, local_limits_admit_during_an_outage_and_the_fleet_gets_back_under_the_limit) {
  fleet f{with_grace(postgres_fleet(url, 2), url)};
  f.add_worker(sharing_worker("a", ", onUnavailable: localLimits"));
  f.add_worker(sharing_worker("b", ", onUnavailable: localLimits"));
  ASSERT_TRUE(eventually([&] { return all_run(f, f.served_revision()); }));
  f.stop_control_plane();
  ASSERT_TRUE(eventually([&] {
    return coordination_state(f, 0) == "degraded" && coordination_state(f, 1) == "degraded";
  }));
  // Each worker admits up to its own limit: four running, twice the
  // shared limit (the documented bound: the sum of the workers' limits).
  sampler workers{[&] { return in_workers(f); }};
  std::vector<std::jthread> long_ones;
  for (size_t w = 0; w < 2; ++w)
    for (int i = 0; i < 2; ++i)
      long_ones.emplace_back([&f, w] {
        EXPECT_EQ(pg_once(f.worker(w).postgres_port(), "SELECT pg_sleep(8)"), "");
      });
  ASSERT_TRUE(eventually([&] { return in_workers(f) == 4; }));
  // Back: the workers tell it what they run, counted past the limit.
  f.start_control_plane();
  ASSERT_TRUE(eventually([&] { return counted_by_control_plane(f) == 4; }));
  // (The registry lists them again with their next heartbeat.)
  EXPECT_TRUE(eventually([&] {
    return leases_of(f, "a").value("pg", 0) == 2 && leases_of(f, "b").value("pg", 0) == 2;
  }));
  ASSERT_TRUE(eventually([&] {
    return coordination_state(f, 0) == "connected" && coordination_state(f, 1) == "connected";
  }));
  // Nobody new runs while the fleet is over the limit.
  std::atomic<bool> newcomer_done{false};
  std::jthread newcomer{[&] {
    EXPECT_EQ(trino_once(f.worker(0).trino_port(), "SELECT pg_sleep(0.1)"), "");
    newcomer_done = true;
  }};
  ASSERT_TRUE(eventually([&] { return queued_on(f, 0) == 1; }));
  EXPECT_EQ(in_workers(f), 4u) << "the long queries ended before the newcomer was seen waiting";
  EXPECT_FALSE(newcomer_done.load());
  for (auto& t : long_ones)
    t.join();
  newcomer.join();
  workers.stop();
  EXPECT_LE(workers.max(), 4u);
  EXPECT_TRUE(eventually([&] { return counted_by_control_plane(f) == 0; }));
}

TEST_F(fleet_test, a_cut_link_neither_loses_nor_doubles_a_lease) {
  fleet f{{postgres_fleet(url, 3), url, ""}};
  f.add_worker(sharing_worker("cut"));
  f.add_worker(sharing_worker("kept"));
  ASSERT_TRUE(eventually([&] { return all_run(f, f.served_revision()); }));
  std::vector<std::jthread> long_ones;
  for (int i = 0; i < 2; ++i)
    long_ones.emplace_back([&f] {
      EXPECT_EQ(pg_once(f.worker(0).postgres_port(), "SELECT pg_sleep(6)"), "");
    });
  ASSERT_TRUE(eventually([&] { return leases_of(f, "cut").value("pg", 0) == 2; }));
  // Longer than the leases' TTL (three seconds): the control plane lets
  // them go, the worker admits nothing new meanwhile (failClosed).
  f.link(0).cut();
  ASSERT_TRUE(eventually([&] { return coordination_state(f, 0) == "closed"; }));
  ASSERT_TRUE(eventually([&] { return !has_lease_session(f, "cut"); }));
  EXPECT_EQ(counted_by_control_plane(f), 0u);
  // Meanwhile the other worker may take what was freed, but only what is
  // left once the cut worker's queries are counted again.
  f.link(0).restore();
  ASSERT_TRUE(eventually([&] { return coordination_state(f, 0) == "connected"; }));
  EXPECT_EQ(leases_of(f, "cut").value("pg", 0), 2);
  EXPECT_EQ(counted_by_control_plane(f), 2u);
  EXPECT_EQ(f.status(0)["coordination"]["leases"].value("pg", 0), 2);
  for (auto& t : long_ones)
    t.join();
  // Given back once, not twice: the count returns to zero, not below.
  EXPECT_TRUE(eventually([&] {
    return counted_by_control_plane(f) == 0 && leases_of(f, "cut").value("pg", 0) == 0;
  }));
  // And the other worker leases and gives back as usual (its release goes
  // after the answer).
  EXPECT_EQ(trino_once(f.worker(1).trino_port(), "SELECT pg_sleep(0.01)"), "");
  EXPECT_TRUE(eventually([&] { return counted_by_control_plane(f) == 0; }));
}
