// The fleet config (clusters, groups, routers, fallback) in PostgreSQL:
// seeded from the YAML file the first time, the source of truth after
// that. Blocking (libpqxx): the CLI reads it before the node starts, the
// config writer edits it.
#pragma once

#include "protocols/config/fleet.hpp"

#include <pqxx/connection>
#include <pqxx/transaction>

#include <optional>
#include <string>

namespace qf::fleet_tables {

/// The stored fleet, or nullopt when the database was never seeded.
/// Throws std::exception when the database cannot be read.
std::optional<config::fleet> load(const std::string& url);

/// Stores f if the database holds no fleet yet, atomically; false when
/// another process (or an earlier start) seeded it first.
bool seed(const std::string& url, const config::fleet& f);

/// Takes the fleet tables for this transaction: writers queue up here.
void lock(pqxx::work& tx);

/// The stored fleet as this transaction sees it.
config::fleet read(pqxx::work& tx);

/// Writes the items that differ from `before` to `after` and bumps the
/// config revision; returns the new revision.
int64_t write_changes(pqxx::work& tx, const config::fleet& before, const config::fleet& after);

/// The config revision: every stored change moves it.
int64_t revision(pqxx::connection& c);

} // namespace qf::fleet_tables
