// The key that signs Studio's sessions, kept in PostgreSQL so that every
// control-plane replica shares it. Blocking (libpqxx): read once at start.
#pragma once

#include <string>

namespace qf::studio_key {

/// The stored key; `candidate` (fresh random bytes as hex) is stored and
/// returned when none is yet. Throws std::exception when the database
/// cannot be read.
std::string stored_or(const std::string& url, const std::string& candidate);

} // namespace qf::studio_key
