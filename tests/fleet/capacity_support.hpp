// What the shared-capacity fleet tests share: a PostgreSQL cluster in one
// group, workers that lease from the control plane, one-shot clients of
// the three protocols, samplers and the control plane's view of leases.
#pragma once

#include "tests/fleet/fleet_fixture.hpp"

#include <mysql.h>
#include <pqxx/pqxx>

#include <atomic>
#include <functional>
#include <thread>

namespace qf::test_support {


inline constexpr const char* slow_sql = "SELECT pg_sleep(0.05)";

/// One PostgreSQL cluster `pg` (the test's database) in group g.
inline std::string postgres_fleet(const std::string& url, int limit) {
  return "clusters:\n  pg: { engine: postgres, endpoint: \"" + url
         + "\" }\nclusterGroups:\n  g: { members: [pg], maxRunningQueries: "
         + std::to_string(limit) + ", maxQueuedQueries: 1000, capacityWaitTimeoutSecs: 120 }\n";
}

inline worker_options sharing_worker(std::string name, std::string extra = {}) {
  auto w = worker_named(std::move(name), 1);
  w.postgres_wire = true;
  w.mysql_wire = true;
  w.node_yaml = "coordination: { mode: controlPlane" + extra + " }\n";
  return w;
}

inline uint32_t running_on(fleet& f, size_t i) {
  auto active = f.worker(i).services()->snapshot->load();
  if (!active)
    return 0;
  auto c = active->clusters.find("pg");
  return c == active->clusters.end() ? 0 : c->second->running();
}

/// Runs sql once over PostgreSQL wire: "" or the error.
inline std::string pg_once(uint16_t port, const std::string& sql) {
  try {
    pqxx::connection c{"host=127.0.0.1 port=" + std::to_string(port)
                       + " user=alice dbname=demo connect_timeout=10"};
    pqxx::nontransaction tx{c};
    tx.exec(sql);
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

/// Runs sql once over MySQL wire: "" or the error.
inline std::string mysql_once(uint16_t port, const std::string& sql) {
  MYSQL* c = mysql_init(nullptr);
  std::string error;
  if (!mysql_real_connect(c, "127.0.0.1", "alice", nullptr, nullptr, port, nullptr, 0)) {
    error = mysql_error(c);
  } else if (mysql_query(c, sql.c_str()) != 0) {
    error = mysql_error(c);
  } else if (auto* r = mysql_store_result(c)) {
    mysql_free_result(r);
  }
  mysql_close(c);
  return error;
}

/// Runs sql once over Trino HTTP: "" or the error.
inline std::string trino_once(uint16_t port, const std::string& sql) {
  auto rows = trino_query(port, sql);
  return rows.is_array() ? "" : rows.dump();
}

/// The largest count seen by `sample` until stopped, sampled in a loop.
class sampler {
public:
  explicit sampler(std::function<uint32_t()> sample)
    : thread_([this, sample] {
        while (!stop_.load()) {
          auto n = sample();
          max_.store(std::max(max_.load(), n));
          ++samples_;
          // The sampling rate (a thousand a second), not a wait for
          // anything: a loop without a pause would take a core from the
          // fleet it watches.
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
      }) {
  }
  ~sampler() {
    stop();
  }
  void stop() {
    stop_.store(true);
    if (thread_.joinable())
      thread_.join();
  }
  uint32_t max() const {
    return max_.load();
  }
  uint64_t samples() const {
    return samples_.load();
  }

private:
  std::atomic<bool> stop_{false};
  std::atomic<uint32_t> max_{0};
  std::atomic<uint64_t> samples_{0};
  std::thread thread_;
};

/// The statements PostgreSQL runs for the gateway now, in the test's own
/// database (the tests' queries are all pg_sleep; other tests run at once).
inline std::function<uint32_t()> engine_count(const std::string& url) {
  auto conn = std::make_shared<pqxx::connection>(url);
  return [conn] {
    pqxx::nontransaction tx{*conn};
    auto r = tx.exec("SELECT count(*) FROM pg_stat_activity WHERE state = 'active' "
                     "AND query LIKE 'SELECT pg_sleep(%' AND pid <> pg_backend_pid() "
                     "AND datname = current_database()");
    return r[0][0].as<uint32_t>();
  };
}

/// The slots the control plane counts for a worker, per cluster ({} when
/// it holds no lease session for it).
inline nlohmann::json leases_of(fleet& f, const std::string& worker) {
  auto w = f.admin("GET", "/admin/workers/" + worker).json();
  return w.is_object() && w.contains("leases") && w["leases"].is_object()
           ? w["leases"]
           : nlohmann::json::object();
}

/// Whether the control plane holds a lease session for the worker.
inline bool has_lease_session(fleet& f, const std::string& worker) {
  auto w = f.admin("GET", "/admin/workers/" + worker).json();
  return w.is_object() && w.contains("leases") && w["leases"].is_object();
}


} // namespace qf::test_support
