// PostgreSQL clusters (libpq, single-row mode).
#pragma once

#include "engines/engine.hpp"

namespace qf::engines {

std::shared_ptr<database> open_postgres(const config::cluster& cfg);

/// The libpq connection string of a cluster: its endpoint URL, or the
/// host/port/database/user/password fields quoted for libpq.
std::string postgres_conninfo(const config::cluster& cfg);

} // namespace qf::engines
