// CAPACITY on a worker with coordination.mode: controlPlane: its clusters'
// slots are leased from the control plane. A query admits on the local
// slot counter as anywhere else (a compare-and-swap, no message), but only
// under the worker's grant; one that finds none tells this actor, which
// asks the control plane for what the waiting queries need, in one call
// for every cluster, and gives back what the worker no longer needs. One
// call is out at a time, each with the next sequence number, repeated
// as it was until it gets an answer; a renewal every heartbeat interval
// keeps the leases alive. While other workers wait for a cluster (the
// control plane says it is contended), slots freed there go back at once
// and the worker's own waiters ask for theirs, so that the control plane
// serves everyone's waiters in arrival order; a worker that holds slots
// renews every quarter second to hear of it.
//
// Control plane down: with onUnavailable: failClosed the worker runs on
// what it holds until its leases would have expired on the control plane
// (two of its three-interval TTL), then admits nothing new; with
// localLimits it admits against its own limits at once. Either way, when
// the control plane answers again, the worker tells it what it runs now
// (a renew), and runs nothing past the shared limit until the fleet is
// back under it.
//
// A control-plane replica's own queries lease the same way from the
// replica that owns the fleet's leases (actors/control/lease_owner.hpp),
// and admit on their own counters while this replica owns them.
#pragma once

#include "actors/core/interfaces.hpp"
#include "protocols/config/model.hpp"

#include <caf/typed_event_based_actor.hpp>

#include <map>
#include <optional>
#include <random>
#include <set>

namespace qf {

class metrics;
class snapshot_cell;
class slot_counter;

struct capacity_settings {
  config::control_plane_link control_plane;
  config::coordination coordination;
  std::string worker_name;
  /// Random per process: the control plane's session key with the name.
  std::string incarnation;
  std::shared_ptr<http_transport> transport;
  std::shared_ptr<snapshot_cell> cell;
  std::shared_ptr<metrics> stats;
};

struct capacity_state {
  static inline const char* name = "capacity";

  enum class link_state { connected, degraded, closed };

  struct holding {
    /// What the control plane counts for this worker, as its last answer
    /// said.
    uint32_t held = 0;
    std::shared_ptr<slot_counter> counter;
    /// Since when slots granted here were idle: kept for a moment (when
    /// nobody else waits), so that the worker's next query finds one.
    caf::actor_clock::time_point idle_since{};
  };

  struct call {
    worker_api::lease_verb verb;
    worker_api::lease_call body;
    caf::actor_clock::time_point sent;
  };

  std::shared_ptr<const capacity_settings> cfg;
  /// Where leases come from: the control plane, or on a control-plane
  /// replica the replica that owns them ("": none known yet).
  std::string url;
  /// A control-plane replica that owns the leases admits on its own
  /// counters: no grant, no call.
  bool owns = false;
  std::map<std::string, holding> clusters;
  std::optional<call> in_flight;
  uint64_t next_seq = 1;
  link_state link = link_state::connected;
  /// Tell the control plane what the worker runs before anything else.
  bool resync = true;
  /// Look at the demand again once the call under way is answered.
  bool dirty = false;
  bool tick_scheduled = false;
  caf::actor_clock::time_point last_answer{};
  /// When the last call went out: a worker that holds slots and made no
  /// call for a while renews to hear whether others wait.
  caf::actor_clock::time_point last_sent{};
  /// Clusters other workers wait for, with this worker's fair share, as
  /// the last answer said.
  std::map<std::string, uint32_t> contended;
  uint32_t failures = 0;
  uint64_t failures_total = 0;
  uint64_t calls_total = 0;
  std::string last_error;
  std::mt19937 rng{std::random_device{}()};
  std::vector<caf::typed_response_promise<atom::ok>> drain_waiters;
  bool draining = false;
};

capacity_actor::behavior_type capacity(capacity_actor::stateful_pointer<capacity_state> self,
                                       std::shared_ptr<const capacity_settings> cfg);

} // namespace qf
