#include "actors/control/config_writer.hpp"

#include "actors/control/database_url.hpp"

#include <caf/all.hpp>
#include <pqxx/pqxx>
#include <spdlog/spdlog.h>

namespace qf {

namespace {

/// Sets the flag in both the column and the stored document; returns the
/// previous value, or nullopt when there is no such cluster.
std::optional<bool> store_active(pqxx::connection& c, const std::string& name, bool on) {
  pqxx::work tx{c};
  auto before = tx.exec_params(
    "SELECT enabled FROM cluster_configs WHERE name = $1 FOR UPDATE", name);
  if (before.empty())
    return std::nullopt;
  tx.exec_params("UPDATE cluster_configs SET enabled = $2, "
                 "config = jsonb_set(config, '{enabled}', to_jsonb($2::boolean)), "
                 "updated_at = now() WHERE name = $1",
                 name, on);
  tx.exec("UPDATE config_revision SET revision = revision + 1, updated_at = now()");
  tx.commit();
  return before[0][0].as<bool>();
}

} // namespace

caf::behavior config_writer(caf::event_based_actor*, std::string url) {
  auto conn = std::make_shared<std::unique_ptr<pqxx::connection>>();
  auto connected = [conn, url = with_timeouts(url)]() -> pqxx::connection& {
    if (!*conn || !(*conn)->is_open())
      *conn = std::make_unique<pqxx::connection>(url);
    return **conn;
  };
  return {
    [conn, connected](atom::activate, const std::string& name, bool on,
                      const apply_change& apply, const admin_respond& respond) {
      std::optional<bool> before;
      try {
        before = store_active(connected(), name, on);
      } catch (const std::exception& e) {
        conn->reset();
        spdlog::error("cannot store the active flag of cluster {}: {}", name, e.what());
        respond({503, "the configuration database cannot be reached; nothing changed"});
        return;
      }
      if (!before) {
        respond({404, "no such cluster"});
        return;
      }
      if (apply()) {
        respond({200, ""});
        return;
      }
      // Compensation: the running node did not take it, so neither does
      // the database. A failing compensation is logged with the original.
      std::string error = "the running node did not accept the change; it was undone";
      try {
        store_active(connected(), name, *before);
      } catch (const std::exception& e) {
        conn->reset();
        error += "; undoing it in the database failed too: ";
        error += e.what();
      }
      spdlog::error("cluster {}: {}", name, error);
      respond({500, error});
    },
  };
}

} // namespace qf
