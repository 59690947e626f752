// Shared capacity: one maxRunningQueries across the control plane and its
// workers, with real clients of all three protocols on every worker and
// the queries running on a real PostgreSQL. Samplers read, while the load
// runs, every worker's running count and PostgreSQL's own count of the
// statements: neither may ever pass the limit.
#include "tests/fleet/capacity_support.hpp"

#include <gtest/gtest.h>

using namespace qf;
using namespace qf::test_support;

TEST_F(fleet_test, one_limit_holds_across_five_workers_under_three_times_the_load) {
  constexpr int limit = 5;
  fleet f{{postgres_fleet(url, limit), url, ""}};
  for (int i = 0; i < 5; ++i)
    f.add_worker(sharing_worker("w" + std::to_string(i)));
  auto revision = f.served_revision();
  ASSERT_TRUE(eventually([&] { return all_run(f, revision); }));

  sampler in_workers{[&] {
    uint32_t n = 0;
    for (size_t i = 0; i < f.size(); ++i)
      n += running_on(f, i);
    return n;
  }};
  sampler in_engine{engine_count(url)};
  // Three times what the limit allows: each worker with a client of each
  // protocol, fifteen in all, each running its queries one after another.
  std::vector<std::thread> clients;
  std::mutex errors_mtx;
  std::vector<std::string> errors;
  std::atomic<int> done{0};
  constexpr int per_client = 6;
  for (size_t w = 0; w < f.size(); ++w)
    for (int protocol = 0; protocol < 3; ++protocol)
      clients.emplace_back([&, w, protocol] {
        auto& node = f.worker(w);
        for (int q = 0; q < per_client; ++q) {
          auto error = protocol == 0   ? trino_once(node.trino_port(), slow_sql)
                       : protocol == 1 ? pg_once(node.postgres_port(), slow_sql)
                                       : mysql_once(node.mysql_port(), slow_sql);
          if (!error.empty()) {
            std::lock_guard guard{errors_mtx};
            errors.push_back(error);
          }
          ++done;
        }
      });
  for (auto& c : clients)
    c.join();
  in_workers.stop();
  in_engine.stop();
  EXPECT_TRUE(errors.empty()) << errors.front();
  EXPECT_EQ(done.load(), 5 * 3 * per_client);
  EXPECT_LE(in_workers.max(), limit) << in_workers.samples() << " samples";
  EXPECT_LE(in_engine.max(), limit) << in_engine.samples() << " samples";
  // The limit bound (the load was enough to fill it), and workers were
  // told no while they had room of their own.
  EXPECT_EQ(in_workers.max(), limit);
  double denied = 0;
  for (size_t i = 0; i < f.size(); ++i)
    denied += std::max(0.0, metric_value("127.0.0.1", f.worker(i).admin_port(),
                                         "queryflux_capacity_lease_denied_total{cluster_group=\"g\"}"));
  EXPECT_GT(denied, 0);
  // Idle again: every lease went back.
  EXPECT_TRUE(eventually([&] {
    for (size_t i = 0; i < f.size(); ++i) {
      if (leases_of(f, "w" + std::to_string(i)).value("pg", 0) != 0)
        return false;
    }
    return true;
  }));
}

TEST_F(fleet_test, the_leases_of_a_killed_worker_come_back_after_their_ttl) {
  fleet f{{postgres_fleet(url, 2), url, ""}};
  f.add_worker(sharing_worker("doomed"));
  f.add_worker(sharing_worker("survivor"));
  auto revision = f.served_revision();
  ASSERT_TRUE(eventually([&] { return all_run(f, revision); }));
  // The doomed worker fills the limit with queries that outlive it. Their
  // clients never hear back from a dead worker: they are left to the end
  // of the process (their statements end with the test's database).
  auto doomed_port = f.worker(0).postgres_port();
  for (int i = 0; i < 2; ++i)
    std::thread{[doomed_port] { pg_once(doomed_port, "SELECT pg_sleep(20)"); }}.detach();
  ASSERT_TRUE(eventually([&] { return leases_of(f, "doomed").value("pg", 0) == 2; }))
    << f.admin("GET", "/admin/workers/doomed").body;
  f.kill_worker(0);
  // Still counted: the control plane cannot tell a dead worker from a slow
  // one until its leases expire.
  EXPECT_EQ(leases_of(f, "doomed").value("pg", 0), 2);
  // The survivor's query waits for them (told no while they count), then
  // runs.
  EXPECT_EQ(trino_once(f.worker(1).trino_port(), "SELECT 1"), "");
  EXPECT_GT(metric_value("127.0.0.1", f.worker(1).admin_port(),
                         "queryflux_capacity_lease_denied_total{cluster_group=\"g\"}"),
            0);
  EXPECT_FALSE(has_lease_session(f, "doomed"));
}

TEST_F(fleet_test, workers_that_share_clusters_with_local_limits_are_warned_about) {
  fleet f{{postgres_fleet(url, 2), url, ""}};
  auto local = [](std::string worker) {
    auto w = worker_named(std::move(worker), 1);
    w.node_yaml = "coordination: { mode: local }\n";
    return w;
  };
  f.add_worker(local("solo"));
  f.add_worker(sharing_worker("shared"));
  auto warning = [&](const std::string& worker) {
    auto w = f.admin("GET", "/admin/workers/" + worker).json();
    return w.is_object() && w["coordinationWarning"].is_string()
             ? w["coordinationWarning"].get<std::string>()
             : std::string{};
  };
  ASSERT_TRUE(eventually([&] { return f.admin("GET", "/admin/workers/shared").status == 200; }));
  // One worker on local limits is what the mode is for.
  EXPECT_EQ(warning("solo"), "");
  f.add_worker(local("second"));
  ASSERT_TRUE(eventually([&] { return !warning("second").empty(); }));
  EXPECT_NE(warning("solo").find("multiplied by 2"), std::string::npos) << warning("solo");
  EXPECT_EQ(warning("shared"), "");
  // Each runs up to the whole limit: the warning is true.
  EXPECT_EQ(trino_once(f.worker(0).trino_port(), "SELECT 1"), "");
  // One of them leaves: no warning left.
  f.stop_worker(2);
  EXPECT_TRUE(eventually([&] { return warning("solo").empty(); }, 60s));
}

TEST_F(fleet_test, back_to_back_queries_on_a_worker_reuse_an_idle_slot_while_nobody_else_waits) {
  fleet f{{postgres_fleet(url, 2), url, ""}};
  f.add_worker(sharing_worker("busy"));
  ASSERT_TRUE(eventually([&] { return all_run(f, f.served_revision()); }));
  // Lease calls the worker sent (acquires, releases, renewals).
  auto calls = [&] { return f.status(0)["coordination"].value("calls", uint64_t{0}); };
  pqxx::connection c{"host=127.0.0.1 port=" + std::to_string(f.worker(0).postgres_port())
                     + " user=alice dbname=demo"};
  auto before = calls();
  constexpr int queries = 40;
  for (int i = 0; i < queries; ++i) {
    pqxx::nontransaction tx{c};
    tx.exec("SELECT 1");
  }
  // Each query finds the slot the one before left: far fewer calls than
  // queries (an acquire and a release per 20 ms at most, and renewals).
  EXPECT_LT(calls() - before, static_cast<uint64_t>(queries / 2));
  // And the slot goes back once idle.
  EXPECT_TRUE(eventually([&] { return leases_of(f, "busy").value("pg", 0) == 0; }));
}
