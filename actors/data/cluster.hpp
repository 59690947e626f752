// The CLUSTER actor: the health cache entry of one backend cluster (checks on
// a timer, each with its own timeout) and its pool of connection actors.
#pragma once

#include "actors/core/messages.hpp"
#include "actors/data/cluster_state.hpp"
#include "protocols/config/model.hpp"

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/stateful_actor.hpp>

#include <atomic>
#include <memory>
#include <random>
#include <vector>

namespace qf {

class metrics;

/// Counts clusters whose first health check has not finished yet.
struct first_health_round {
  std::atomic<int> pending{0};

  bool done() const {
    return pending.load() <= 0;
  }
};

struct cluster_actor_state {
  static inline const char* name = "cluster";
  config::cluster cfg;
  config::monitor monitor;
  std::shared_ptr<cluster_state> shared;
  std::shared_ptr<metrics> stats;
  std::shared_ptr<first_health_round> first_round;
  /// Whether its health checks ask the engine for its running count (this
  /// node holds engine reconciliation's lock); null: always.
  std::shared_ptr<const std::atomic<bool>> counting;
  bool first_check_reported = false;
  std::shared_ptr<engines::database> db;
  caf::actor checker;
  /// What the checker was spawned to ask: a changed monitor takes a new
  /// checker at the next check.
  config::health_probe checker_probe;
  /// Every connection actor alive, lent or idle: all end with the cluster.
  std::vector<caf::actor> connections;
  std::mt19937 rng{std::random_device{}()};
  /// Bumped by (de)activation: checks of an earlier generation are void.
  uint64_t generation = 0;
  /// As last (de)activated; routing reads cluster_state::enabled, which
  /// the admin API flips at once, before this actor hears of it.
  bool active = false;
  /// Replaced or deleted by an admin change: no checks, no metrics, and
  /// the actor ends once every connection it lent has come back.
  bool retired = false;
};

/// Handlers:
/// - (acquire) -> a new conn_lease, or errc engine_unavailable (idle ones
///   are borrowed straight from cluster_state);
/// - (release, conn_lease, bool reusable): pools it, or ends it;
/// - (activate, bool on): the health cache transitions of the spec:
///   deactivated -> UNKNOWN and out of routing at once; activated ->
///   PENDING and checked now rather than after a whole interval;
/// - (update, monitor): the fleet's monitor changed; the next check runs
///   with its probe and interval, the health stays as it is;
/// - (retire, bool deleted): the cluster was replaced or deleted; it
///   leaves routing at once (and, deleted, the metrics) and quits when its
///   in-flight queries have returned their connections;
/// - (check, generation): INTERNAL, runs one health check and schedules
///   the next.
caf::behavior cluster_actor(caf::stateful_actor<cluster_actor_state>* self,
                            config::cluster cfg, config::monitor monitor,
                            std::shared_ptr<cluster_state> shared,
                            std::shared_ptr<metrics> stats,
                            std::shared_ptr<first_health_round> first_round,
                            std::shared_ptr<const std::atomic<bool>> counting = nullptr);

} // namespace qf

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(qf::config::monitor)
