// The actors of a fleet config: one cluster actor per cluster, one group
// actor per group, linked through their shared cluster_state. A change
// builds the next set from the one running, keeping every cluster and group
// whose config did not change, so their counts, pools, health and queues
// carry on.
#pragma once

#include "actors/node/node.hpp"

#include <caf/fwd.hpp>

#include <memory>
#include <vector>

namespace qf {

struct fleet_context {
  caf::actor_system* sys = nullptr;
  std::shared_ptr<metrics> stats;
  /// Counts the first checks of the clusters built at start only.
  std::shared_ptr<first_health_round> first_round;
  /// A worker sharing capacity: its capacity actor, which its clusters
  /// ask for slots (none elsewhere: slots are not leased).
  caf::actor capacity;
  /// A control plane: its lease table, whose waiting acquires hear of
  /// freed slots and of a new config (its limits may have grown).
  caf::actor lease_table;
  /// Whether health checks ask the engines for their running counts
  /// (actors/node/engine_reconciler.hpp); null: always.
  std::shared_ptr<const std::atomic<bool>> counting;
};

/// The next active config for cfg (with `fleet`, its stored form), built on
/// `before` (null at start). Actors of `before` that the result does not
/// keep are retired: out of routing now, ended once their work is done.
/// Deleted clusters leave the metrics. The retired actors are added to
/// `retired`, to be ended with the node if they are still there.
std::shared_ptr<active_config> build_fleet(const fleet_context& ctx,
                                           std::shared_ptr<const config::gateway_config> cfg,
                                           config::fleet fleet, const active_config* before,
                                           std::vector<caf::actor>& retired);

/// Ends every fleet actor of `active` now (node shutdown).
void stop_fleet(const active_config& active);

} // namespace qf
