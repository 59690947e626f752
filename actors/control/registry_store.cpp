// The worker_registry table: one transaction per batch of heartbeats.
#include "actors/control/database_url.hpp"
#include "actors/control/worker_registry.hpp"

#include <caf/all.hpp>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <spdlog/spdlog.h>

namespace qf {

namespace {

using nlohmann::json;

/// The rows to write (those with a registration time) and the heartbeat
/// intervals this replica knows, as two JSON documents: two parameters,
/// whatever the batch's size. Times go as ages, so that the table holds
/// the database's clock alone.
std::pair<std::string, std::string> batch_json(const std::vector<worker_entry>& batch) {
  json rows = json::array();
  json intervals = json::object();
  auto now = wall_ms();
  for (const auto& e : batch) {
    if (e.report.heartbeat_interval_secs > 0)
      intervals[e.report.name] = e.report.heartbeat_interval_secs;
    if (e.registered_at_ms == 0)
      continue;
    auto optional = [](const std::string& s) { return s.empty() ? json(nullptr) : json(s); };
    rows.push_back({{"name", e.report.name},
                    {"labels", e.report.labels},
                    {"version", e.report.version},
                    {"active_revision", optional(e.report.active_revision)},
                    {"last_error", optional(e.report.last_error)},
                    {"enrolled", e.enrolled},
                    {"registered_age_ms", std::max<int64_t>(0, now - e.registered_at_ms)},
                    {"seen_age_ms", std::max<int64_t>(0, now - e.last_seen_at_ms)},
                    {"status", e.status}});
  }
  auto replace = json::error_handler_t::replace;
  return {rows.dump(-1, ' ', false, replace), intervals.dump(-1, ' ', false, replace)};
}

std::vector<worker_entry> write(pqxx::connection& c, const std::vector<worker_entry>& batch) {
  auto [rows, intervals] = batch_json(batch);
  pqxx::work tx{c};
  // A row another replica wrote from a later heartbeat is not overwritten;
  // the registration time moves only when the worker registered here.
  tx.exec_params(
    "INSERT INTO worker_registry AS w (name, labels, version, active_revision, last_error, "
    "registered_at, last_seen_at, status) "
    "SELECT r.name, coalesce(r.labels, '{}'), r.version, r.active_revision, r.last_error, "
    "now() - make_interval(secs => r.registered_age_ms / 1000.0), "
    "now() - make_interval(secs => r.seen_age_ms / 1000.0), r.status "
    "FROM jsonb_to_recordset($1::jsonb) AS r(name text, labels jsonb, version text, "
    "active_revision text, last_error text, enrolled boolean, registered_age_ms bigint, "
    "seen_age_ms bigint, status text) "
    "ON CONFLICT (name) DO UPDATE SET labels = EXCLUDED.labels, version = EXCLUDED.version, "
    "active_revision = EXCLUDED.active_revision, last_error = EXCLUDED.last_error, "
    "registered_at = CASE WHEN (SELECT r2.enrolled FROM jsonb_to_recordset($1::jsonb) AS "
    "r2(name text, enrolled boolean) WHERE r2.name = EXCLUDED.name) "
    "THEN EXCLUDED.registered_at ELSE w.registered_at END, "
    "last_seen_at = EXCLUDED.last_seen_at, status = EXCLUDED.status "
    "WHERE w.last_seen_at <= EXCLUDED.last_seen_at",
    rows);
  // Gone: no replica heard from it for three of its intervals (of 100 s
  // for workers this replica never heard from: it does not know theirs).
  tx.exec_params("UPDATE worker_registry SET status = 'gone' WHERE status <> 'gone' "
                 "AND last_seen_at < now() - make_interval(secs => 3 * "
                 "coalesce(($1::jsonb ->> name)::int, 100))",
                 intervals);
  // Pods come and go with new names: a day after, they go from the table.
  tx.exec("DELETE FROM worker_registry WHERE status = 'gone' "
          "AND last_seen_at < now() - interval '1 day'");
  auto result = tx.exec(
    "SELECT name, labels::text, version, coalesce(active_revision, ''), "
    "coalesce(last_error, ''), (extract(epoch FROM registered_at) * 1000)::bigint, "
    "(extract(epoch FROM last_seen_at) * 1000)::bigint, status FROM worker_registry");
  tx.commit();
  std::vector<worker_entry> out;
  out.reserve(result.size());
  for (const auto& row : result) {
    worker_entry e;
    e.report.name = row[0].as<std::string>();
    e.report.heartbeat_interval_secs = 0; // not stored: unknown here
    auto labels = json::parse(row[1].as<std::string>(), nullptr, false);
    if (labels.is_object())
      for (const auto& [k, v] : labels.items())
        if (v.is_string())
          e.report.labels[k] = v.get<std::string>();
    e.report.version = row[2].as<std::string>();
    e.report.active_revision = row[3].as<std::string>();
    e.report.last_error = row[4].as<std::string>();
    e.registered_at_ms = row[5].as<int64_t>();
    e.last_seen_at_ms = row[6].as<int64_t>();
    e.status = row[7].as<std::string>();
    out.push_back(std::move(e));
  }
  return out;
}

} // namespace

registry_store_actor::behavior_type registry_store(registry_store_actor::pointer self,
                                                   std::string url) {
  auto conn = std::make_shared<std::unique_ptr<pqxx::connection>>();
  (void) self;
  return {
    [conn, url](atom::put,
                const std::vector<worker_entry>& batch) -> caf::result<std::vector<worker_entry>> {
      try {
        if (!*conn || !(*conn)->is_open())
          *conn = std::make_unique<pqxx::connection>(with_timeouts(url, 10'000));
        return write(**conn, batch);
      } catch (const std::exception& e) {
        conn->reset();
        return make_error(errc::storage_error, e.what());
      }
    },
  };
}

} // namespace qf
