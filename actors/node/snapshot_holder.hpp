// The SNAPSHOT HOLDER: owns the active config of a node, publishes it to the
// atomic cell the hot path reads, and swaps it when the fleet changes (admin
// API, reload from the database, a worker's snapshot). It keeps where the
// config came from (file, control plane, peer), when the control plane last
// confirmed it and whether it is stale, and on a node that serves workers
// hands each new config to the config store.
#pragma once

#include "actors/core/interfaces.hpp"
#include "actors/node/fleet_actors.hpp"

#include <caf/typed_event_based_actor.hpp>

#include <optional>

namespace qf {

struct snapshot_holder_state {
  static inline const char* name = "snapshot_holder";
  std::shared_ptr<const active_config> active;
  /// Replaced actors still finishing their work, ended with the node.
  std::vector<caf::actor> retired;
  holder_status status;
};

struct snapshot_holder_settings {
  std::shared_ptr<snapshot_cell> cell;
  fleet_context ctx;
  /// The config a node starts with; none on a worker, which waits for
  /// its first snapshot.
  std::optional<fleet_update> first;
  /// Set where workers are served: every new config goes there.
  config_store_actor store;
};

snapshot_holder_actor::behavior_type
snapshot_holder(snapshot_holder_actor::stateful_pointer<snapshot_holder_state> self,
                snapshot_holder_settings settings);

} // namespace qf
