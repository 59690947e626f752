// The LEASE OWNER ELECTION: control-plane replicas on one database keep
// one maxRunningQueries between them by letting one replica own the
// fleet's leases. That replica holds a PostgreSQL advisory lock on a
// connection of its own (the lock goes with the connection, so a replica
// that dies, kill -9 or a cut network, loses it as soon as PostgreSQL
// notices) and writes its address to capacity_lease_owner; the others
// forward workers' lease calls there, and their own queries lease from it
// like a worker's. The owner writes what it counts to
// cluster_capacity_leases, batched (at most one transaction a tenth of a
// second, only the difference); a replica that takes over starts from that
// record, so it neither forgets a lease nor grants one twice while workers
// renew.
#pragma once

#include "actors/core/interfaces.hpp"

#include <caf/typed_event_based_actor.hpp>

#include <map>
#include <memory>

namespace qf {

/// The session holding the lock (libpqxx, kept out of this header).
struct lease_owner_db;

struct lease_owner_settings {
  std::string database_url;
  /// This replica's holder name and the URL the others forward to.
  std::string replica;
  std::string advertise_url;
  lease_table_actor table;
  /// How often the lock is tried for (or checked while held).
  caf::timespan every = std::chrono::seconds(1);
};

struct lease_owner_state {
  static inline const char* name = "lease_owner";
  lease_owner_settings cfg;
  std::unique_ptr<lease_owner_db> db;
  bool owner = false;
  /// An owner whose session was lost: the lock is to be taken again and
  /// the record written whole.
  bool rewrite = false;
  /// The owner URL last told to the table (unset before the first).
  std::optional<std::string> told;
  /// What the record holds: (holder, cluster) -> (count, ttl).
  std::map<std::pair<std::string, std::string>, std::pair<uint32_t, uint32_t>> written;
  std::map<std::string, uint32_t> totals;

  lease_owner_state();
  ~lease_owner_state();
};

/// Spawned detached.
lease_owner_actor::behavior_type
lease_owner(lease_owner_actor::stateful_pointer<lease_owner_state> self, lease_owner_settings cfg);

} // namespace qf
