// Engine reconciliation: one node of the fleet at a time (the holder of
// the engine-reconcile sweep lock) asks PostgreSQL how many statements it
// runs, every client's, and every other node weighs that count without
// asking. Outside sessions keep statements running in the cluster's
// database; the test watches who counts and what each worker reports as
// the cluster's load while the holder goes away, a worker holding it dies
// and the control plane stops.
#include "tests/fleet/capacity_support.hpp"

#include <caf/all.hpp>
#include <gtest/gtest.h>

using namespace qf;
using namespace qf::test_support;

namespace {

reconcile_status reconcile_of(server& node) {
  auto svc = node.services();
  reconcile_status out;
  caf::scoped_actor self{*svc->sys};
  self->request(svc->reconciler, std::chrono::seconds(5), atom::get::value)
    .receive([&](reconcile_status& r) { out = std::move(r); },
             [&](caf::error& err) { out.last_error = caf::to_string(err); });
  return out;
}

/// What node weighs as pg's load besides its own queries.
uint32_t reported_on(server& node) {
  auto active = node.services()->snapshot->load();
  return active ? active->clusters.at("pg")->reported_load.load() : 0;
}

/// Statements that run until released: one session holds an advisory
/// lock, the others wait for it inside a statement (state 'active').
class blocked_statements {
public:
  blocked_statements(const std::string& url, int n) : holder_(url) {
    pqxx::nontransaction{holder_}.exec("SELECT pg_advisory_lock(7001)");
    for (int i = 0; i < n; ++i)
      waiters_.emplace_back([url] {
        pqxx::connection c{url};
        pqxx::nontransaction{c}.exec("SELECT pg_advisory_lock(7001), pg_advisory_unlock(7001)");
      });
  }
  ~blocked_statements() {
    pqxx::nontransaction{holder_}.exec("SELECT pg_advisory_unlock(7001)");
    waiters_.clear(); // joins
  }

private:
  pqxx::connection holder_;
  std::vector<std::jthread> waiters_;
};

} // namespace

TEST_F(fleet_test, one_node_counts_what_the_engine_runs_and_every_worker_weighs_it) {
  fleet f{{postgres_fleet(url, 50), url, ""}};
  for (int i = 0; i < 3; ++i)
    f.add_worker(sharing_worker("w" + std::to_string(i)));
  ASSERT_TRUE(eventually([&] { return all_run(f, f.served_revision()); }));
  constexpr uint32_t outside = 3;
  blocked_statements load{url, outside};

  auto nodes = [&] {
    std::vector<server*> out{&f.control_plane()};
    for (size_t i = 0; i < f.size(); ++i)
      if (f.alive(i))
        out.push_back(&f.worker(i));
    return out;
  };
  // Exactly one node holds the lock and counts; every worker weighs the
  // outside statements as pg's load.
  auto one_counts_and_all_see = [&](const std::vector<server*>& among) {
    int holders = 0, counting = 0;
    for (auto* n : among) {
      auto r = reconcile_of(*n);
      holders += r.holds_lock;
      counting += r.counting;
    }
    if (holders != 1 || counting != 1)
      return false;
    for (size_t i = 0; i < f.size(); ++i)
      if (f.alive(i) && reported_on(f.worker(i)) != outside)
        return false;
    return true;
  };
  // What each node says, for a failure's message.
  auto describe = [&] {
    std::string out;
    for (auto* n : nodes()) {
      auto r = reconcile_of(*n);
      out += (n == &f.control_plane() ? std::string{"cp"} : n->services()->worker_name)
             + ": counting=" + std::to_string(r.counting) + " holds=" + std::to_string(r.holds_lock)
             + " holder=" + r.lock_holder + " failures=" + std::to_string(r.failures)
             + " error=" + r.last_error + " reported=" + std::to_string(reported_on(*n)) + "\n";
    }
    return out;
  };
  ASSERT_TRUE(eventually([&] { return one_counts_and_all_see(nodes()); })) << describe();
  // The load shows where leastLoaded looks.
  nlohmann::json listed;
  EXPECT_TRUE(eventually([&] {
    listed = f.admin("GET", "/admin/clusters").json();
    return listed.is_array() && listed.size() == 1
           && listed[0].value("reportedLoad", -1) == static_cast<int>(outside);
  })) << listed.dump();

  // The control plane gives the lock up (as it does when it drains): a
  // worker takes it at its next tick.
  {
    auto svc = f.control_plane().services();
    caf::scoped_actor self{*svc->sys};
    bool released = false;
    self->request(svc->reconciler, std::chrono::seconds(5), atom::drain::value)
      .receive([&](atom::ok) { released = true; }, [](caf::error&) {});
    ASSERT_TRUE(released);
  }
  auto workers = [&] {
    auto all = nodes();
    all.erase(all.begin());
    return all;
  };
  size_t holder = f.size();
  ASSERT_TRUE(eventually([&] {
    if (!one_counts_and_all_see(workers()))
      return false;
    for (size_t i = 0; i < f.size(); ++i)
      if (reconcile_of(f.worker(i)).holds_lock)
        holder = i;
    return true;
  })) << describe();
  ASSERT_LT(holder, f.size());

  // That worker dies holding it: after the lock's TTL another one counts.
  f.kill_worker(holder);
  ASSERT_TRUE(eventually([&] { return one_counts_and_all_see(workers()); })) << describe();

  // Without the control plane nobody can hold the lock: each worker asks
  // the engine itself rather than weigh nothing.
  f.stop_control_plane();
  ASSERT_TRUE(eventually([&] {
    for (size_t i = 0; i < f.size(); ++i) {
      if (!f.alive(i))
        continue;
      auto r = reconcile_of(f.worker(i));
      if (!r.counting || r.holds_lock || r.failures == 0 || reported_on(f.worker(i)) != outside)
        return false;
    }
    return true;
  })) << describe();
  for (size_t i = 0; i < f.size(); ++i) {
    if (f.alive(i)) {
      EXPECT_GT(metric_value("127.0.0.1", f.worker(i).admin_port(),
                             "queryflux_coordination_failures_total{operation=\"sweep_lock\"}"),
                0);
    }
  }

  // It is back: one node counts again.
  f.start_control_plane();
  ASSERT_TRUE(eventually([&] { return one_counts_and_all_see(nodes()); })) << describe();
}
