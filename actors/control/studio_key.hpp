// What Studio's sessions keep in PostgreSQL, so that every control-plane
// replica shares them: the key that signs them, and the sessions logged
// out. Blocking (libpqxx): read at start, and by the studio_revocations
// actor after that.
#pragma once

#include "actors/core/interfaces.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace qf {

class revoked_sessions;

namespace studio_key {

/// The stored key; `candidate` (fresh random bytes as hex) is stored and
/// returned when none is yet. Throws std::exception when the database
/// cannot be read.
std::string stored_or(const std::string& url, const std::string& candidate);

/// The sessions logged out and not expired, id -> expiry (seconds since
/// the epoch); the expired rows are deleted. Throws std::exception.
std::map<std::string, int64_t> revoked(const std::string& url);

} // namespace studio_key

/// The STUDIO REVOCATIONS actor (detached: libpqxx blocks): writes a
/// logout, and brings the other replicas' into `into` every `every`.
studio_revocations_actor::behavior_type
studio_revocations(studio_revocations_actor::pointer self, std::string url,
                   std::shared_ptr<revoked_sessions> into, caf::timespan every);

} // namespace qf
