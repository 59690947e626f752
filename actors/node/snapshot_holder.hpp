// The SNAPSHOT HOLDER: owns the active config of a node, publishes it to the
// atomic cell the hot path reads, and swaps it when the fleet changes
// (admin API, reload from the database).
#pragma once

#include "actors/node/fleet_actors.hpp"

#include <caf/stateful_actor.hpp>

namespace qf {

/// A fleet to run: the whole config and the fleet part as stored.
struct fleet_update {
  std::shared_ptr<const config::gateway_config> config;
  config::fleet fleet;
};

struct snapshot_holder_state {
  static inline const char* name = "snapshot_holder";
  std::shared_ptr<const active_config> active;
  /// Replaced actors still finishing their work, ended with the node.
  std::vector<caf::actor> retired;
};

/// Handlers:
/// - (update, fleet_update) -> bool: builds the next active config on the
///   running one and publishes it; false when it cannot be built (the
///   running one stays);
/// - (close, bool expired): withdraws the config from the hot path while
///   expired (databaseCache), publishes it again after.
caf::behavior snapshot_holder(caf::stateful_actor<snapshot_holder_state>* self,
                              std::shared_ptr<snapshot_cell> cell, fleet_context ctx,
                              fleet_update first);

} // namespace qf

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(qf::fleet_update)
