// Admission under a fleet-wide limit: acquire+release pairs per second for
// one group, two ways, side by side in one run on the same machine.
//  (a) QueryFlux: a control plane and W workers in this process (each its
//      own node, leasing over loopback HTTP), then two control-plane
//      replicas on one PostgreSQL database with half the workers on each
//      (the other's calls forwarded to the lease owner), T threads per worker, each
//      admitted by its worker's group actor (the path every query that
//      finds no free slot takes) and giving its slot straight back;
//  (b) the per-query durable row design on PostgreSQL (QF_PG_URL): one
//      transaction per acquire (a conditional UPDATE of the group's counter
//      plus a lease row) and one per release, W x T connections.
// Both under the same limit, with twice as many callers as it allows.
// Usage: lease_throughput [SECONDS=5] [WORKERS=4] [THREADS=16] [LIMIT=32]
#include "actors/core/messages.hpp"
#include "tests/support/fleet.hpp"

#include <caf/all.hpp>
#include <pqxx/pqxx>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <thread>

using namespace qf;
using namespace qf::test_support;
using clock_type = std::chrono::steady_clock;

namespace {

std::string database_url() {
  auto* url = std::getenv("QF_PG_URL");
  return url ? url : "postgres://postgres@127.0.0.1:15432/postgres";
}

/// Pairs per second counted by `pairs` over `seconds`, after a second's
/// warm-up; then stops the callers.
double rate_of(std::atomic<uint64_t>& pairs, int seconds, std::atomic<bool>& run,
               std::vector<std::thread>& callers) {
  std::this_thread::sleep_for(std::chrono::seconds(1)); // warm-up
  auto from = pairs.load();
  auto start = clock_type::now();
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  auto got = pairs.load() - from;
  auto elapsed = std::chrono::duration<double>(clock_type::now() - start).count();
  run = false;
  for (auto& c : callers)
    c.join();
  return static_cast<double>(got) / elapsed;
}

/// A fresh database on the server of QF_PG_URL, dropped with it.
struct scratch_database {
  std::string name = "qf_bench_" + std::to_string(std::random_device{}());
  std::string url;
  scratch_database() {
    run("CREATE DATABASE " + name);
    auto base = database_url();
    url = base.substr(0, base.rfind('/') + 1) + name;
  }
  ~scratch_database() {
    run("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
  }
  static void run(const std::string& sql) {
    pqxx::connection c{database_url()};
    pqxx::nontransaction tx{c};
    tx.exec(sql);
  }
};

double leased(int seconds, int workers, int threads, int limit, bool replicas) {
  auto fleet_yaml = "clusters:\n  lite: { engine: sqlite }\nclusterGroups:\n  g: { members: [lite], "
                    "maxRunningQueries: "
                    + std::to_string(limit) + ", maxQueuedQueries: 10000 }\n";
  std::optional<scratch_database> db;
  if (replicas)
    db.emplace();
  fleet f{{fleet_yaml, replicas ? db->url : "", ""}};
  std::unique_ptr<server> second;
  if (replicas) {
    second = f.replica();
    // The first replica owns the leases; the second forwards to it.
    pqxx::connection c{db->url};
    if (!eventually([&] {
          pqxx::nontransaction tx{c};
          return !tx.exec("SELECT 1 FROM capacity_lease_owner").empty();
        })) {
      std::fprintf(stderr, "no replica owns the leases\n");
      std::exit(1);
    }
  }
  for (int i = 0; i < workers; ++i) {
    auto w = worker_named("w" + std::to_string(i), 10);
    w.node_yaml = "coordination: { mode: controlPlane }\n";
    if (second && i % 2 == 1)
      w.control_plane_port = second->admin_port();
    f.add_worker(w);
  }
  auto revision = f.served_revision();
  if (!eventually([&] {
        for (size_t i = 0; i < f.size(); ++i)
          if (f.status(i).value("activeRevision", nlohmann::json{}) != revision)
            return false;
        return true;
      })) {
    std::fprintf(stderr, "the workers did not sync\n");
    std::exit(1);
  }
  std::atomic<bool> run{true};
  std::atomic<uint64_t> pairs{0};
  std::vector<std::atomic<uint64_t>> per_worker(static_cast<size_t>(workers));
  std::atomic<uint32_t> over{0};
  std::vector<std::thread> callers;
  for (int w = 0; w < workers; ++w)
    for (int t = 0; t < threads; ++t)
      callers.emplace_back([&, w] {
        auto svc = f.worker(static_cast<size_t>(w)).services();
        auto group = svc->snapshot->load()->groups.at("g");
        caf::scoped_actor self{*svc->sys};
        while (run.load()) {
          bool ok = false;
          self->request(group, std::chrono::seconds(30), atom::admit::value,
                        svc->next_ticket.fetch_add(1))
            .receive(
              [&](admission& a) {
                a.cluster->release();
                ok = true;
              },
              [&](caf::error&) {});
          if (ok) {
            ++pairs;
            ++per_worker[static_cast<size_t>(w)];
          }
        }
      });
  // Whatever the workers hold, together, stays under the limit.
  std::thread sampler([&] {
    while (run.load()) {
      uint32_t n = 0;
      for (size_t i = 0; i < f.size(); ++i)
        n += f.worker(i).services()->snapshot->load()->clusters.at("lite")->running();
      if (n > static_cast<uint32_t>(limit))
        over.store(std::max(over.load(), n));
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  auto rate = rate_of(pairs, seconds, run, callers);
  sampler.join();
  if (over.load() > 0)
    std::fprintf(stderr, "over the limit: %u running\n", over.load());
  // Fairness: each worker's share of the pairs (equal demand everywhere).
  uint64_t least = UINT64_MAX, most = 0;
  for (auto& n : per_worker) {
    least = std::min<uint64_t>(least, n.load());
    most = std::max<uint64_t>(most, n.load());
  }
  std::printf("per worker: least %llu, most %llu pairs (whole run)\n",
              static_cast<unsigned long long>(least), static_cast<unsigned long long>(most));
  return rate;
}

double durable_rows(int seconds, int callers_n, int limit) {
  auto url = database_url();
  {
    pqxx::connection c{url};
    pqxx::work tx{c};
    tx.exec("DROP TABLE IF EXISTS bench_leases, bench_counters");
    tx.exec("CREATE TABLE bench_counters (grp TEXT PRIMARY KEY, running BIGINT NOT NULL "
            "CHECK (running >= 0))");
    tx.exec("CREATE TABLE bench_leases (id TEXT PRIMARY KEY, grp TEXT NOT NULL, holder TEXT NOT "
            "NULL, acquired_at TIMESTAMPTZ NOT NULL DEFAULT now())");
    tx.exec("INSERT INTO bench_counters VALUES ('g', 0)");
    tx.commit();
  }
  std::atomic<bool> run{true};
  std::atomic<uint64_t> pairs{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < callers_n; ++t)
    callers.emplace_back([&, t] {
      pqxx::connection c{url};
      { // every commit waits for its WAL flush, as a durable lease must
        pqxx::nontransaction s{c};
        s.exec("SET synchronous_commit = on");
      }
      c.prepare("take", "UPDATE bench_counters SET running = running + 1 WHERE grp = 'g' AND "
                        "running < $1 RETURNING running");
      c.prepare("row", "INSERT INTO bench_leases (id, grp, holder) VALUES ($1, 'g', $2)");
      c.prepare("drop", "DELETE FROM bench_leases WHERE id = $1");
      c.prepare("give", "UPDATE bench_counters SET running = running - 1 WHERE grp = 'g'");
      uint64_t n = 0;
      auto holder = "t" + std::to_string(t);
      while (run.load()) {
        auto id = holder + "-" + std::to_string(++n);
        {
          pqxx::work tx{c};
          auto r = tx.exec_prepared("take", limit);
          if (r.empty()) {
            tx.commit();
            continue; // full: ask again, as a worker would
          }
          tx.exec_prepared("row", id, holder);
          tx.commit();
        }
        {
          pqxx::work tx{c};
          tx.exec_prepared("drop", id);
          tx.exec_prepared("give");
          tx.commit();
        }
        ++pairs;
      }
    });
  auto rate = rate_of(pairs, seconds, run, callers);
  pqxx::connection c{url};
  pqxx::work tx{c};
  tx.exec("DROP TABLE bench_leases, bench_counters");
  tx.commit();
  return rate;
}

} // namespace

int main(int argc, char** argv) {
  int seconds = argc > 1 ? std::atoi(argv[1]) : 5;
  int workers = argc > 2 ? std::atoi(argv[2]) : 4;
  int threads = argc > 3 ? std::atoi(argv[3]) : 16;
  int limit = argc > 4 ? std::atoi(argv[4]) : 32;
  spdlog::set_level(spdlog::level::warn);
  std::printf("one group, maxRunningQueries %d, %d callers (%d workers x %d), %d s each\n", limit,
              workers * threads, workers, threads, seconds);
  auto ours = leased(seconds, workers, threads, limit, false);
  auto two = leased(seconds, workers, threads, limit, true);
  auto rows = durable_rows(seconds, workers * threads, limit);
  std::printf("%-50s %10.0f pairs/s\n", "QueryFlux leases (control plane + workers)", ours);
  std::printf("%-50s %10.0f pairs/s\n", "QueryFlux leases (two replicas, half forwarded)", two);
  std::printf("%-50s %10.0f pairs/s\n", "durable row per acquire and release (PG)", rows);
  std::printf("ratio: %.1fx one control plane, %.1fx two replicas (aim: 50x, and at least 6,400 "
              "pairs/s)\n",
              ours / rows, two / rows);
  return 0;
}
