// Control-plane replicas on one database keep one maxRunningQueries between
// them: one owns the leases (an advisory lock), the other forwards its
// workers' calls there and leases its own queries' slots from it. When the
// owner goes, the survivor takes over from the record in PostgreSQL, and
// PostgreSQL's own count of the statements never passes the limit; a
// control plane restarted while a worker is cut off counts that worker's
// leases from the record before the worker has said a word.
#include "tests/fleet/capacity_support.hpp"

#include <caf/all.hpp>
#include <gtest/gtest.h>

#include <mutex>

using namespace qf;
using namespace qf::test_support;

namespace {

/// Clients each running queries one after another until stopped.
class load {
public:
  load(std::function<std::string()> run, int clients) {
    for (int i = 0; i < clients; ++i)
      threads_.emplace_back([this, run] {
        while (!stop_.load()) {
          auto error = run();
          if (!error.empty()) {
            std::lock_guard guard{mtx_};
            errors_.push_back(error);
          }
          ++done_;
        }
      });
  }
  ~load() {
    stop();
  }
  /// Waits for every client's query under way.
  void stop() {
    stop_.store(true);
    for (auto& t : threads_)
      if (t.joinable())
        t.join();
  }
  uint64_t done() const {
    return done_.load();
  }
  std::vector<std::string> errors() {
    std::lock_guard guard{mtx_};
    return errors_;
  }

private:
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> done_{0};
  std::mutex mtx_;
  std::vector<std::string> errors_;
  std::vector<std::thread> threads_;
};

std::string admin_url(uint16_t port) {
  return "http://127.0.0.1:" + std::to_string(port);
}

/// The slots a node's lease table counts for a holder on pg (the registry
/// need not know the holder: a worker cut off since the restart).
uint32_t leased_to(server& node, const std::string& holder) {
  auto svc = node.services();
  caf::scoped_actor self{*svc->sys};
  uint32_t n = 0;
  self->request(svc->lease_table, 5s, atom::get::value)
    .receive(
      [&](std::vector<lease_holder_view>& all) {
        for (const auto& h : all)
          if (h.worker == holder && h.held.contains("pg"))
            n = h.held.at("pg");
      },
      [](caf::error&) {});
  return n;
}

uint32_t running_at(server& node) {
  auto active = node.services()->snapshot->load();
  return active ? active->clusters.at("pg")->running() : 0;
}

} // namespace

class replica_capacity_test : public fleet_test {
protected:
  std::string lease_owner() {
    auto r = query("SELECT url FROM capacity_lease_owner");
    return r.empty() ? "" : r[0][0].as<std::string>();
  }
};

TEST_F(replica_capacity_test, two_replicas_keep_one_limit_and_the_survivor_takes_over) {
  constexpr int limit = 4;
  // The takeover waits for the record's holders to renew, not for a clock.
  control_plane_options cp{postgres_fleet(url, limit), url, ""};
  cp.lease_grace = 30s;
  fleet f{cp};
  auto b = f.replica();
  ASSERT_TRUE(eventually([&] { return lease_owner() == admin_url(f.control_plane().admin_port()); }));
  auto w = sharing_worker("w1");
  w.control_plane_port = b->admin_port(); // its calls reach A through B
  f.add_worker(w);
  auto revision = f.served_revision();
  ASSERT_TRUE(eventually([&] { return all_run(f, revision); }));

  sampler in_engine{engine_count(url)};
  // Three times the limit: A's own queries, B's own, and the worker's over
  // both wire protocols.
  auto a_trino = f.control_plane().trino_port();
  auto b_trino = b->trino_port();
  auto w_pg = f.worker(0).postgres_port();
  auto w_my = f.worker(0).mysql_port();
  load on_a{[&] { return trino_once(a_trino, slow_sql); }, 3};
  load on_b{[&] { return trino_once(b_trino, slow_sql); }, 3};
  load on_w{[&] { return pg_once(w_pg, slow_sql); }, 3};
  load on_w_mysql{[&] { return mysql_once(w_my, slow_sql); }, 3};
  ASSERT_TRUE(eventually([&] {
    return on_a.done() >= 5 && on_b.done() >= 5 && on_w.done() + on_w_mysql.done() >= 5;
  })) << "A ran " << on_a.done() << ", B " << on_b.done() << ", the worker "
      << on_w.done() + on_w_mysql.done() << "; A runs " << running_at(f.control_plane())
      << ", B " << running_at(*b) << ", the worker " << running_on(f, 0);
  // A counts the worker and B's own queries: the worker's session is there.
  EXPECT_TRUE(eventually([&] { return has_lease_session(f, "w1"); }));
  // B, which follows, shows the worker's slots from A's record.
  EXPECT_TRUE(eventually([&] {
    auto entry = http_request("GET", admin_url(b->admin_port()) + "/admin/workers/w1",
                              {{"Authorization", "Basic YWRtaW46YWRtaW4="}})
                   .json();
    return entry.is_object() && entry["leases"].is_object() &&
           entry["leases"].value("pg", 0) > 0;
  })) << http_request("GET", admin_url(b->admin_port()) + "/admin/workers/w1",
                      {{"Authorization", "Basic YWRtaW46YWRtaW4="}})
           .body;

  // The owner goes (its clients first, so that no query of its runs on).
  on_a.stop();
  f.stop_control_plane();
  ASSERT_TRUE(eventually([&] { return lease_owner() == admin_url(b->admin_port()); }));
  // B serves its own queries and its worker's, from the leases it counts.
  auto b_before = on_b.done(), w_before = on_w.done() + on_w_mysql.done();
  ASSERT_TRUE(eventually([&] {
    return on_b.done() >= b_before + 5 && on_w.done() + on_w_mysql.done() >= w_before + 5;
  })) << "B ran " << on_b.done() - b_before << ", the worker "
      << on_w.done() + on_w_mysql.done() - w_before << "; B runs " << running_at(*b)
      << ", the worker " << running_on(f, 0) << "; worker status " << f.status(0).dump();
  on_b.stop();
  on_w.stop();
  on_w_mysql.stop();
  in_engine.stop();

  for (auto* l : {&on_a, &on_b, &on_w, &on_w_mysql})
    EXPECT_TRUE(l->errors().empty()) << l->errors().front();
  EXPECT_LE(in_engine.max(), limit) << in_engine.samples() << " samples";
  EXPECT_EQ(in_engine.max(), limit) << "the load never filled the limit";
  // Every slot comes back: the worker's, and A's own once its TTL is over.
  ASSERT_TRUE(eventually([&] { return running_at(*b) == 0; }));
}

TEST_F(replica_capacity_test, a_restarted_control_plane_counts_the_leases_of_the_record) {
  constexpr int limit = 2;
  control_plane_options cp{postgres_fleet(url, limit), url, ""};
  cp.lease_grace = 30s;
  fleet f{cp};
  auto w = sharing_worker("w0");
  w.heartbeat_interval_secs = 3; // its leases live 9 s without a renewal
  f.add_worker(w);
  auto revision = f.served_revision();
  ASSERT_TRUE(eventually([&] { return all_run(f, revision); }));

  // Two queries fill the limit on the worker, and the record says so.
  auto port = f.worker(0).postgres_port();
  std::vector<std::thread> queries;
  std::vector<std::string> errors(2);
  for (int i = 0; i < 2; ++i)
    queries.emplace_back([&, i] { errors[i] = pg_once(port, "SELECT pg_sleep(4)"); });
  ASSERT_TRUE(eventually([&] {
    return query("SELECT count(*) FROM cluster_capacity_leases WHERE holder = 'w0'")[0][0]
             .as<int>()
           == 2;
  }));

  // The worker cannot reach the control plane while it restarts.
  f.link(0).cut();
  f.stop_control_plane();
  f.start_control_plane();
  ASSERT_TRUE(eventually([&] { return leased_to(f.control_plane(), "w0") == 2; }));
  EXPECT_EQ(running_at(f.control_plane()), 2u);

  // Back: the worker renews what it runs, counted once; then all ends.
  f.link(0).restore();
  for (auto& q : queries)
    q.join();
  EXPECT_EQ(errors, (std::vector<std::string>{"", ""}));
  ASSERT_TRUE(eventually([&] { return running_at(f.control_plane()) == 0; }));
  ASSERT_TRUE(eventually([&] {
    return query("SELECT count(*) FROM cluster_capacity_leases WHERE holder = 'w0'")[0][0]
             .as<int>()
           == 0;
  }));
}

TEST_F(replica_capacity_test, a_follower_passes_the_owners_refusals_on_with_their_codes) {
  fleet f{{postgres_fleet(url, 2), url, ""}};
  auto b = f.replica();
  ASSERT_TRUE(eventually([&] { return lease_owner() == admin_url(f.control_plane().admin_port()); }));
  auto call = [&](const std::string& verb, const std::string& body) {
    return http_request("POST", admin_url(b->admin_port()) + "/worker/capacity/" + verb,
                        {{"Authorization", std::string{"Bearer "} + fleet_secret},
                         {"Content-Type", "application/json"}},
                        body);
  };
  // Forwarded: the owner starts the session, and counts it. B learns who
  // the owner is from the database on its own round: until then it says
  // 503, try again, as a worker would be told.
  http_answer renewed;
  ASSERT_TRUE(eventually([&] {
    renewed = call("renew", R"({"worker":"w9","incarnation":"i1","seq":1,)"
                            R"("heartbeatIntervalSecs":1,"holding":[{"cluster":"pg","count":1}]})");
    return renewed.status != 503;
  }));
  ASSERT_EQ(renewed.status, 200) << renewed.body;
  EXPECT_EQ(renewed.json()["leaseTtlSecs"], 3);
  EXPECT_EQ(leased_to(f.control_plane(), "w9"), 1u);
  // More back than it holds: the owner's 409 and code, through B.
  auto over = call("release", R"({"worker":"w9","incarnation":"i1","seq":2,)"
                              R"("releases":[{"cluster":"pg","count":2}]})");
  EXPECT_EQ(over.status, 409) << over.body;
  EXPECT_EQ(over.json()["code"], "notHeld");
  auto unknown = call("acquire", R"({"worker":"w9","incarnation":"other","seq":3,)"
                                 R"("requests":[{"cluster":"pg","group":"g","count":1}]})");
  EXPECT_EQ(unknown.status, 409) << unknown.body;
  EXPECT_EQ(unknown.json()["code"], "unknownSession");
  EXPECT_EQ(running_at(f.control_plane()), 1u); // nothing changed
}

TEST_F(replica_capacity_test, a_follower_forwards_sweep_lock_calls_so_that_the_replicas_keep_one_lock) {
  fleet f{{postgres_fleet(url, 2), url, ""}};
  auto b = f.replica();
  ASSERT_TRUE(eventually([&] { return lease_owner() == admin_url(f.control_plane().admin_port()); }));
  auto call = [&](uint16_t port, const std::string& verb, const std::string& body) {
    return http_request("POST", admin_url(port) + "/worker/sweep-lock/" + verb,
                        {{"Authorization", std::string{"Bearer "} + fleet_secret},
                         {"Content-Type", "application/json"}},
                        body);
  };
  const auto a_port = f.control_plane().admin_port();
  const auto b_port = b->admin_port();
  // A lock of its own, apart from the replicas' engine-reconcile: taken
  // through the follower, it is the owner's.
  // B says 503, try again, until it has learned who the owner is.
  http_answer taken;
  ASSERT_TRUE(eventually([&] {
    taken = call(b_port, "acquire", R"({"name":"fleet.test","holder":"x","ttlSecs":60})");
    return taken.status != 503;
  }));
  ASSERT_EQ(taken.status, 200) << taken.body;
  ASSERT_TRUE(taken.json()["granted"].get<bool>()) << taken.body;
  auto token = taken.json()["token"].get<uint64_t>();
  auto refused = call(a_port, "acquire", R"({"name":"fleet.test","holder":"y","ttlSecs":60})");
  ASSERT_EQ(refused.status, 200) << refused.body;
  EXPECT_FALSE(refused.json()["granted"].get<bool>());
  EXPECT_EQ(refused.json()["holder"], "x");
  // Published through the follower, read on the owner.
  auto body = [&](const std::string& holder) {
    return R"({"name":"fleet.test","holder":")" + holder + R"(","token":)"
           + std::to_string(token) + R"(,"counts":[{"cluster":"pg","running":3}]})";
  };
  ASSERT_EQ(call(b_port, "publish", body("x")).status, 200);
  auto counts = http_request("GET", admin_url(a_port) + "/worker/sweep-lock/counts?name=fleet.test",
                             {{"Authorization", std::string{"Bearer "} + fleet_secret}});
  ASSERT_EQ(counts.status, 200) << counts.body;
  ASSERT_EQ(counts.json()["counts"].size(), 1u) << counts.body;
  EXPECT_EQ(counts.json()["counts"][0]["running"], 3);
  EXPECT_EQ(counts.json()["counts"][0]["publisher"], "x");
  // The owner's refusal, status and code, through the follower.
  auto intruder = call(b_port, "publish", body("y"));
  EXPECT_EQ(intruder.status, 409) << intruder.body;
  EXPECT_EQ(intruder.json()["code"], "notHeld");

  // And engine-reconcile itself: one of the two replicas counts.
  auto holds = [](server& node) {
    auto svc = node.services();
    caf::scoped_actor self{*svc->sys};
    bool held = false;
    self->request(svc->reconciler, 5s, atom::get::value)
      .receive([&](reconcile_status& r) { held = r.holds_lock && r.counting; },
               [](caf::error&) {});
    return held;
  };
  EXPECT_TRUE(eventually([&] { return holds(f.control_plane()) != holds(*b); }));
}
