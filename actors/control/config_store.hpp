// The fleet config (clusters, groups, routers, fallback) in PostgreSQL:
// seeded from the YAML file the first time, the source of truth after
// that. Blocking (libpqxx); the CLI reads it before the node starts.
#pragma once

#include "protocols/config/fleet.hpp"

#include <optional>
#include <string>

namespace qf::config_store {

/// The stored fleet, or nullopt when the database was never seeded.
/// Throws std::exception when the database cannot be read.
std::optional<config::fleet> load(const std::string& url);

/// Stores f if the database holds no fleet yet, atomically; false when
/// another process (or an earlier start) seeded it first.
bool seed(const std::string& url, const config::fleet& f);

} // namespace qf::config_store
