// What a lease from the control plane adds to a query: one worker with
// coordination.mode: controlPlane and one with local, side by side in one
// run (a control plane and both workers in this process, over loopback),
// queries alternating between them, one at a time, over PostgreSQL wire
// (one connection to each) on an idle SQLite cluster: the controlPlane worker holds no slot when a query
// arrives, so each takes one acquire from the control plane (the release
// goes after the answer). Prints p50 and p99 of each and the difference.
// Usage: lease_latency [QUERIES=500]
#include "bench/percentile.hpp"
#include "tests/support/fleet.hpp"

#include <pqxx/pqxx>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <thread>

using namespace qf;
using namespace qf::test_support;
using clock_type = std::chrono::steady_clock;
using qf::bench::percentile;

int main(int argc, char** argv) {
  int queries = argc > 1 ? std::atoi(argv[1]) : 500;
  spdlog::set_level(spdlog::level::warn);
  fleet f{{"clusters:\n  lite: { engine: sqlite }\nclusterGroups:\n  g: { members: [lite], "
           "maxRunningQueries: 8 }\n",
           "", ""}};
  auto leasing = worker_named("leasing", 10);
  leasing.node_yaml = "coordination: { mode: controlPlane }\n";
  auto local = worker_named("local", 10);
  local.node_yaml = "coordination: { mode: local }\n";
  leasing.postgres_wire = true;
  local.postgres_wire = true;
  f.add_worker(leasing);
  f.add_worker(local);
  auto revision = f.served_revision();
  if (!eventually([&] {
        return f.status(0).value("activeRevision", nlohmann::json{}) == revision
               && f.status(1).value("activeRevision", nlohmann::json{}) == revision;
      })) {
    std::fprintf(stderr, "the workers did not sync\n");
    return 1;
  }
  std::vector<std::unique_ptr<pqxx::connection>> conns;
  for (size_t w = 0; w < 2; ++w)
    conns.push_back(std::make_unique<pqxx::connection>(
      "host=127.0.0.1 port=" + std::to_string(f.worker(w).postgres_port())
      + " user=bench dbname=demo"));
  auto run = [&](int n, std::chrono::milliseconds apart, const char* what) {
    std::vector<double> times[2];
    for (int q = 0; q < n + 20; ++q)
      for (size_t w = 0; w < 2; ++w) {
        // The spacing of the queries, not a wait for anything.
        std::this_thread::sleep_for(apart);
        auto start = clock_type::now();
        pqxx::nontransaction tx{*conns[w]};
        tx.exec("SELECT 1");
        auto ms = std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
        if (q >= 20) // after a warm-up
          times[w].push_back(ms);
      }
    std::printf("%d queries each, one at a time, %s (PostgreSQL wire, SQLite)\n", n, what);
    std::printf("  %-28s p50 %6.2f ms   p99 %6.2f ms\n", "coordination: controlPlane",
                percentile(times[0], 0.5), percentile(times[0], 0.99));
    std::printf("  %-28s p50 %6.2f ms   p99 %6.2f ms\n", "coordination: local",
                percentile(times[1], 0.5), percentile(times[1], 0.99));
    std::printf("  added by the lease: p50 %+.2f ms, p99 %+.2f ms\n",
                percentile(times[0], 0.5) - percentile(times[1], 0.5),
                percentile(times[0], 0.99) - percentile(times[1], 0.99));
  };
  run(queries, std::chrono::milliseconds(0), "back to back");
  run(std::max(queries / 5, 50), std::chrono::milliseconds(30), "30 ms apart");
  return 0;
}
