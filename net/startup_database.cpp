#include "net/startup_database.hpp"

#include "actors/control/fleet_tables.hpp"
#include "actors/control/migrator.hpp"
#include "protocols/config/fleet.hpp"

#include <spdlog/spdlog.h>

#include <fstream>
#include <sstream>

namespace qf::startup {

database_state prepare_database(const config::persistence_settings& p) {
  if (p.type != "postgres")
    return database_state::ready;
  try {
    auto r = p.auto_migrate ? migrator::migrate(p.url) : migrator::check(p.url);
    if (!r.applied.empty())
      spdlog::info("migrated the database from V{} to V{}", r.applied.front() - 1,
                   r.version);
    if (r.version < migrator::latest_version()) {
      spdlog::error("the database is at V{}, this QueryFlux needs V{}: run "
                    "`queryflux migrate`, or set persistence.autoMigrate",
                    r.version, migrator::latest_version());
      return database_state::refused;
    }
    return database_state::ready;
  } catch (const migrator::migration_error& e) {
    if (e.unreachable()) {
      spdlog::warn("{}; waiting for it", e.what());
      return database_state::unreachable;
    }
    spdlog::error("{}", e.what());
    return database_state::refused;
  }
}

std::optional<served_config> with_stored_fleet(const std::string& path,
                                               config::gateway_config cfg) {
  const auto& url = cfg.queryflux.persistence.url;
  std::ifstream in{path};
  std::ostringstream text;
  text << in.rdbuf();
  // A file with one group may leave the fallback out; written down, it
  // stays when an admin adds a second group.
  auto file_fleet = config::fleet_of(text.str());
  if (file_fleet.routing_fallback.empty())
    file_fleet.routing_fallback = cfg.routing_fallback;
  if (cfg.queryflux.persistence.type != "postgres")
    return served_config{std::move(cfg), std::move(file_fleet), text.str()};
  try {
    auto stored = fleet_tables::load(url);
    if (!stored) {
      if (fleet_tables::seed(url, file_fleet))
        spdlog::info("seeded the database with the clusters, groups and routers of {}", path);
      stored = fleet_tables::load(url);
    } else {
      spdlog::info("clusters, groups and routers come from the database ({} clusters); "
                   "those of {} are ignored",
                   stored->clusters.size(), path);
    }
    auto merged = config::load_with_fleet(text.str(), *stored);
    for (const auto& p : merged.problems)
      spdlog::error("the configuration stored in the database: {}", p);
    if (!merged.config)
      return std::nullopt;
    return served_config{std::move(*merged.config), std::move(*stored), text.str()};
  } catch (const std::exception& e) {
    spdlog::error("cannot read the configuration from the database: {}", e.what());
    return std::nullopt;
  }
}

} // namespace qf::startup
