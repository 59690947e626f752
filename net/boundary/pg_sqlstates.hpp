// The SQLSTATEs PostgreSQL wire clients get for what fails on our side:
// a refusal of the gateway's (queue full, capacity wait, a routing rule's
// denial...) by its Trino error name, an engine's failure by the server's
// own SQLSTATE or its kind.
#pragma once

#include "engines/engine.hpp"

#include <string>

namespace qf {

/// The SQLSTATE of one of our refusals, by its Trino error name
/// (statement_page::error_name).
std::string sqlstate_for(const std::string& error_name);

/// An engine failure's SQLSTATE: the server's own, else one for its kind.
std::string sqlstate_for(const engines::engine_error& e);

} // namespace qf
