// ENGINE RECONCILIATION: how many queries each engine really runs (every
// client's, not only ours) is asked by one node of the fleet at a time,
// the holder of the "engine-reconcile" sweep lock, and published to every
// other node through the control plane (/worker/sweep-lock/*), so that
// fifty workers do not each poll Trino's /v1/query or PostgreSQL's
// pg_stat_activity. Every health-check interval (monitor.taskDelay) each
// node takes the lock again: its holder's health checks count, and it
// publishes what they counted since it took the lock; any other node reads
// the published counts into its clusters' reportedLoad, which leastLoaded
// weighs. The lock lives three intervals, so a holder that dies is
// replaced within three intervals and a tick; a holder that is drained
// gives it up at once. A node that cannot reach the lock counts on its own
// (fail open: a few more probes beat load nobody measures), and a count
// older than three intervals and five seconds is not used.
#pragma once

#include "actors/core/interfaces.hpp"

#include <caf/typed_event_based_actor.hpp>

#include <atomic>
#include <memory>
#include <optional>
#include <random>

namespace qf {

class metrics;
class snapshot_cell;

struct engine_reconciler_settings {
  /// This node's name in the lock: the worker's, or the control plane's.
  std::string holder;
  /// A control plane: its own lease table keeps the locks ...
  lease_table_actor table;
  /// ... a worker: the control plane's, over HTTP.
  std::string url;
  std::string shared_secret;
  std::shared_ptr<http_transport> transport;
  /// Read by the node's health checks: whether they ask the engines.
  std::shared_ptr<std::atomic<bool>> counting;
  std::shared_ptr<snapshot_cell> cell;
  std::shared_ptr<metrics> stats;
};

struct engine_reconciler_state {
  static inline const char* name = "engine_reconciler";
  engine_reconciler_settings cfg;
  reconcile_status status;
  uint64_t token = 0;
  /// Samples taken since then are this holder's to publish.
  int64_t held_since_ms = 0;
  /// The call under way over HTTP (its id and verb): a late answer to an
  /// earlier one is dropped.
  uint64_t call_id = 0;
  worker_api::sweep_verb call_verb = worker_api::sweep_verb::acquire;
  bool draining = false;
  std::vector<caf::typed_response_promise<atom::ok>> drain_waiters;
  std::mt19937 rng{std::random_device{}()};
};

engine_reconciler_actor::behavior_type
engine_reconciler(engine_reconciler_actor::stateful_pointer<engine_reconciler_state> self,
                  engine_reconciler_settings cfg);

} // namespace qf
