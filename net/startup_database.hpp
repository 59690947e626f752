// What `serve` does with the database before the node starts, when
// persistence.type is postgres: bring the schema up to date, and take the
// fleet config (clusters, groups, routers) from it.
#pragma once

#include "protocols/config/fleet.hpp"

#include <optional>
#include <string>

namespace qf::startup {

enum class database_state { ready, unreachable, refused };

/// The database must be at this binary's schema before anything serves:
/// migrated now (autoMigrate) or already. `refused` is reported; an
/// `unreachable` database is worth waiting for.
database_state prepare_database(const config::persistence_settings& p);

/// What a node serves: the config, its fleet part as stored, and the file.
struct served_config {
  config::gateway_config config;
  config::fleet fleet;
  std::string file_text;
};

/// The config to serve: the file's, or with PostgreSQL persistence the
/// file's node-local part with the fleet from the database (seeded from
/// the file the first time). nullopt (reported) when the stored fleet is
/// unreadable or invalid.
std::optional<served_config> with_stored_fleet(const std::string& path,
                                               config::gateway_config cfg);

} // namespace qf::startup
