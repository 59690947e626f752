// The WORKER REGISTRY: who registered with this control plane and when each
// worker last heartbeated, kept in memory (heartbeats never wait on the
// database) and written to worker_registry in one transaction a second
// through the REGISTRY STORE, however many workers there are. A worker
// whose heartbeats stop for three of its intervals is gone; one that
// says it is shutting down is draining until then. Without a database (a
// standalone serving workers) the registry lives in memory only.
#pragma once

#include "actors/core/interfaces.hpp"

#include <caf/typed_event_based_actor.hpp>

#include <map>
#include <set>

namespace qf {

struct worker_registry_state {
  static inline const char* name = "worker_registry";
  std::map<std::string, worker_entry> workers;
  /// When each worker was last heard from, on the actor's clock (gone is
  /// decided on it; last_seen_at_ms is what users and the table see).
  std::map<std::string, caf::actor_clock::time_point> heard;
  /// Changed since the last batch went out.
  std::set<std::string> dirty;
  bool writing = false;
  /// Live workers with coordination.mode: local, as last warned about.
  std::set<std::string> local_mode;
  registry_store_actor store;
};

/// `store` is null without a database.
worker_registry_actor::behavior_type
worker_registry(worker_registry_actor::stateful_pointer<worker_registry_state> self,
                registry_store_actor store);

/// The store, spawned detached.
registry_store_actor::behavior_type registry_store(registry_store_actor::pointer self,
                                                   std::string url);

} // namespace qf
