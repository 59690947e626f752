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

/// The rows to write (those with a registration time) and every known
/// worker's heartbeat interval, as two JSON documents: two parameters,
/// whatever the batch's size.
std::pair<std::string, std::string> batch_json(const std::vector<worker_entry>& batch) {
  json rows = json::array();
  json intervals = json::object();
  for (const auto& e : batch) {
    intervals[e.report.name] = e.report.heartbeat_interval_secs;
    if (e.registered_at_ms == 0)
      continue;
    auto optional = [](const std::string& s) { return s.empty() ? json(nullptr) : json(s); };
    rows.push_back({{"name", e.report.name},
                    {"labels", e.report.labels},
                    {"version", e.report.version},
                    {"active_revision", optional(e.report.active_revision)},
                    {"last_error", optional(e.report.last_error)},
                    {"registered_at", e.registered_at_ms},
                    {"last_seen_at", e.last_seen_at_ms},
                    {"status", e.status}});
  }
  auto replace = json::error_handler_t::replace;
  return {rows.dump(-1, ' ', false, replace), intervals.dump(-1, ' ', false, replace)};
}

std::vector<worker_entry> write(pqxx::connection& c, const std::vector<worker_entry>& batch) {
  auto [rows, intervals] = batch_json(batch);
  pqxx::work tx{c};
  // A row another replica wrote from a later heartbeat is not overwritten.
  tx.exec_params(
    "INSERT INTO worker_registry AS w (name, labels, version, active_revision, last_error, "
    "registered_at, last_seen_at, status) "
    "SELECT r.name, coalesce(r.labels, '{}'), r.version, r.active_revision, r.last_error, "
    "to_timestamp(r.registered_at / 1000.0), to_timestamp(r.last_seen_at / 1000.0), r.status "
    "FROM jsonb_to_recordset($1::jsonb) AS r(name text, labels jsonb, version text, "
    "active_revision text, last_error text, registered_at bigint, last_seen_at bigint, "
    "status text) "
    "ON CONFLICT (name) DO UPDATE SET labels = EXCLUDED.labels, version = EXCLUDED.version, "
    "active_revision = EXCLUDED.active_revision, last_error = EXCLUDED.last_error, "
    "registered_at = EXCLUDED.registered_at, last_seen_at = EXCLUDED.last_seen_at, "
    "status = EXCLUDED.status WHERE w.last_seen_at <= EXCLUDED.last_seen_at",
    rows);
  // Gone: no replica heard from it for three of its intervals (10 s for
  // workers this replica never heard from).
  tx.exec_params("UPDATE worker_registry SET status = 'gone' WHERE status <> 'gone' "
                 "AND last_seen_at < now() - make_interval(secs => 3 * "
                 "coalesce(($1::jsonb ->> name)::int, 10))",
                 intervals);
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
