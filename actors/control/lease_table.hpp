// The LEASE TABLE: one maxRunningQueries per cluster across the control
// plane and its workers. A worker leases slots on a cluster; the table
// takes them from the very counters the control plane's own queries
// admit on (actors/data/slot_counter.hpp), so the control plane's
// queries and every worker's share one limit, and a lease is a
// compare-and-swap in memory, not a database transaction.
//
// Each worker has one session: its incarnation, the sequence number of
// its last call (with that call's answer, given again to a repeat), what
// it holds per cluster and when that expires. A worker renews its leases
// every heartbeat interval; they expire after three intervals without a
// call, and the sweep (every second) gives them back. A renew is absolute:
// from a worker the table does not know (the control plane restarted, or
// the worker's leases expired during an outage) it takes what the worker
// says it holds, even past a limit (nobody is admitted then until the
// count is back under it). For a grace period after start the table
// grants no new slots, so that every worker can first renew what it held.
//
// Control-plane replicas on one database share one table: the replica
// that owns it (actors/control/lease_owner.hpp) serves every call and
// writes what it counts to PostgreSQL; the others forward calls to it. A
// replica taking over starts from that record (each holder's slots held
// until it renews them or their TTL ends), and its grace ends as soon as
// every holder in the record has renewed.
#pragma once

#include "actors/control/sweep_locks.hpp"
#include "actors/core/interfaces.hpp"

#include <caf/typed_event_based_actor.hpp>

#include <deque>
#include <map>
#include <set>

namespace qf {

class metrics;
class snapshot_cell;
class slot_counter;

struct lease_table_settings {
  /// The control plane's active config: its clusters' slot counters.
  std::shared_ptr<snapshot_cell> cell;
  std::shared_ptr<metrics> stats;
  /// After start: renewals only, no new grants (one heartbeat interval
  /// and a half at the default).
  caf::timespan grace = std::chrono::seconds(15);
  caf::timespan sweep_every = std::chrono::seconds(1);
  /// A worker's leases live this many of its heartbeat intervals.
  uint32_t ttl_intervals = 3;

  /// Replicas on one database (actors/control/lease_owner.hpp): the table
  /// serves calls only while this replica owns the leases and forwards
  /// them otherwise; false: it always owns them (no database).
  bool replicated = false;
  /// This replica's holder name: its own queries' slots, written to the
  /// record as its holding (it leases them like a worker while another
  /// replica owns the table).
  std::string replica;
  uint32_t own_ttl_secs = 3;
  lease_forwarder_actor forwarder;
  capacity_actor replica_client;
  /// How often an owner writes what changed to the record.
  caf::timespan flush_every = std::chrono::milliseconds(100);
};

struct lease_table_state {
  static inline const char* name = "lease_table";

  struct holding {
    uint32_t count = 0;
    /// The counter the slots came from: the cluster's, shared with a
    /// successor when an admin change replaces the cluster.
    std::shared_ptr<slot_counter> counter;
  };

  struct session {
    std::string incarnation;
    uint64_t last_seq = 0;
    /// The answer to last_seq when it was an acquire.
    std::optional<worker_api::acquire_answer> last_answer;
    std::map<std::string, holding> held;
    /// When it was last denied slots on each cluster (it wants some).
    std::map<std::string, caf::actor_clock::time_point> denied_at;
    uint32_t ttl_secs = 30;
    caf::actor_clock::time_point expires;
  };

  struct parked {
    worker_api::lease_call call;
    caf::typed_response_promise<worker_api::acquire_answer> promise;
    caf::actor_clock::time_point until;
  };

  lease_table_settings cfg;
  caf::actor_clock::time_point grace_ends;
  std::map<std::string, session> sessions;
  /// When each cluster last denied a worker: contended for a second after.
  std::map<std::string, caf::actor_clock::time_point> denied_at;
  std::deque<parked> waiting;
  /// When the timer for the earliest end of a waiting call's wait, or of
  /// the grace, fires (none set).
  std::optional<caf::actor_clock::time_point> timer_at;

  /// Whether this replica owns the leases (always, unreplicated).
  bool owner = true;
  /// After a takeover: holders of the record that have not renewed yet;
  /// the grace ends when none is left.
  std::set<std::string> awaited;
  /// The election: the record's writer while this replica owns the
  /// leases, its reader (for who holds what) while another does.
  lease_owner_actor record;
  std::vector<lease_row> last_written;
  bool writing = false;
  bool record_failing = false;
  /// Whether this replica's own queries admit on its counters (after the
  /// grace of a takeover).
  bool own_admitting = false;
  /// Engine reconciliation's locks and counts (kept by the owner; a
  /// takeover starts without them: the next holder publishes again).
  sweep_locks locks{first_sweep_token()};

  /// Past every token an earlier owner gave: microseconds of the wall clock.
  static uint64_t first_sweep_token();
};

/// A sweep-lock call, served (an owner) or forwarded
/// (actors/control/lease_table_sweep.cpp).
caf::result<worker_api::sweep_answer>
serve_sweep_lock(lease_table_actor::stateful_pointer<lease_table_state> self,
                 worker_api::sweep_verb verb, worker_api::sweep_call& c);

/// The owner writes what it counts to the record: one write at a time,
/// and only when something changed (actors/control/lease_table_record.cpp).
void write_record(lease_table_actor::stateful_pointer<lease_table_state> self);

/// A follower's answer to who holds what: the owner's record, read by the
/// election (nothing while no election has spoken to this table).
caf::result<std::vector<lease_holder_view>>
holders_of_record(lease_table_actor::stateful_pointer<lease_table_state> self);

lease_table_actor::behavior_type
lease_table(lease_table_actor::stateful_pointer<lease_table_state> self, lease_table_settings cfg);

} // namespace qf
