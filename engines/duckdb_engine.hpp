// Embedded DuckDB engine.
#pragma once

#include "engines/engine.hpp"

namespace qf::engines {

std::shared_ptr<database> open_duckdb(const config::cluster& cfg);

} // namespace qf::engines
