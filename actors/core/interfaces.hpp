// The typed interfaces of the worker-mode actors, one heading each, a
// comment per handler. INTERNAL handlers are messages an actor sends itself.
#pragma once

#include "actors/core/messages.hpp"
#include "actors/core/worker_messages.hpp"
#include "actors/worker/http_transport.hpp"

#include <caf/typed_actor.hpp>

#include <string>
#include <vector>

namespace qf {

/// The SNAPSHOT HOLDER: a node's active config, what it came from and how
/// fresh it is; swaps it atomically for the hot path.
using snapshot_holder_actor = caf::typed_actor<
  // Builds the next active config on the running one (unchanged clusters
  // and groups keep their pools, health and queues) and publishes it;
  // false when it cannot be built, the running one staying.
  caf::replies_to<atom::update, fleet_update>::with<bool>,
  // A worker's snapshot: as update, keeping its revision and origin.
  caf::replies_to<atom::activate, fleet_update, snapshot_origin>::with<bool>,
  // The control plane confirmed this revision at this time (ms since the
  // epoch): the stale flag clears when it is the active one.
  caf::reacts_to<atom::confirm, std::string, int64_t>,
  // databaseCache expiry: withdraws the config from the hot path (true)
  // or publishes it again (false).
  caf::reacts_to<atom::close, bool>,
  // What is active, for /worker/status and /worker/peer-config.
  caf::replies_to<atom::get>::with<holder_status>>;

/// The CONFIG STORE's snapshot side (control plane, or standalone with
/// workerApi): the snapshot of the config the node runs, serialized once
/// per revision, and the workers' long polls parked until it changes.
using config_store_actor = caf::typed_actor<
  // The node runs this config now; a new revision wakes every waiter.
  caf::reacts_to<atom::publish, worker_api::snapshot_content>,
  // The current snapshot; errc::not_configured before the first.
  caf::replies_to<atom::get>::with<served_snapshot>,
  // A long poll: answers at once with the current snapshot when its
  // revision is not `since`, else when it changes, or with none after
  // `hold` (and a little jitter, so that workers spread out).
  caf::replies_to<atom::wait, std::string, caf::timespan>::with<snapshot_wait_result>,
  // INTERNAL: the hold of waiter `id` ran out.
  caf::reacts_to<atom::timeout, uint64_t>>;

/// The WORKER REGISTRY (control plane): who registered, their last
/// heartbeat, written to worker_registry in batches.
using worker_registry_actor = caf::typed_actor<
  // A worker registers (enroll) or heartbeats; answered at once, written
  // with the next batch.
  caf::replies_to<atom::enroll, worker_api::worker_report>::with<atom::ok>,
  caf::replies_to<atom::heartbeat, worker_api::worker_report>::with<atom::ok>,
  // Every worker known, and one by name (errc::unknown_worker).
  caf::replies_to<atom::get>::with<std::vector<worker_entry>>,
  caf::replies_to<atom::get, std::string>::with<worker_entry>,
  // INTERNAL: marks missed heartbeats gone and writes the batch.
  caf::reacts_to<atom::tick>>;

/// The STUDIO REVOCATIONS (standalone or control plane on PostgreSQL):
/// Studio's logouts, shared by the replicas through the database.
using studio_revocations_actor = caf::typed_actor<
  // A session logged out (its id, and when it would expire, seconds since
  // the epoch): written for the other replicas.
  caf::reacts_to<atom::put, std::string, int64_t>,
  // INTERNAL: reads every replica's logouts into the node's set.
  caf::reacts_to<atom::tick>>;

/// The REGISTRY STORE: the worker_registry table (detached: libpqxx
/// blocks). One transaction per batch, whatever the number of workers.
using registry_store_actor = caf::typed_actor<
  // Upserts `changed`, marks gone those whose last heartbeat (any
  // replica's) is older than three of their intervals, returns every row.
  caf::replies_to<atom::put, std::vector<worker_entry>>::with<std::vector<worker_entry>>>;

/// The LEASE TABLE (control plane): the fleet's slots on each cluster,
/// counted per worker, drawn from the same counters the control plane's
/// own queries take theirs from; a worker's leases expire when it stops
/// renewing them.
using lease_table_actor = caf::typed_actor<
  // Slots for a worker (partial grants; a call that gets none may wait
  // for up to its waitMs); errc::unknown_session, bad_lease,
  // stale_lease_call.
  caf::replies_to<atom::acquire, worker_api::lease_call>::with<worker_api::acquire_answer>,
  // Slots back; errc::lease_not_held when it gives back more than it
  // holds (then nothing changes). The answer lists contended clusters.
  caf::replies_to<atom::release, worker_api::lease_call>::with<worker_api::acquire_answer>,
  // What the worker holds, all of it: renews the leases (the answer has
  // their TTL and the contended clusters) and, for a worker the table does
  // not know (after a restart or an outage), takes them as they are.
  caf::replies_to<atom::renew, worker_api::lease_call>::with<worker_api::acquire_answer>,
  // Who holds what.
  caf::replies_to<atom::get>::with<std::vector<lease_holder_view>>,
  // A sweep lock (POST /worker/sweep-lock/*): acquire, release, publish
  // counts, read them; errc::lease_not_held for a release or publish
  // without the lock.
  caf::replies_to<atom::sweep_lock, worker_api::sweep_verb, worker_api::sweep_call>::with<
    worker_api::sweep_answer>,
  // Replicas (from the lease owner election): this replica owns the
  // fleet's leases now, starting from the shared record ...
  caf::reacts_to<atom::leader, lease_takeover>,
  // ... or another does, at this URL ("": none known yet): calls are
  // forwarded to it.
  caf::reacts_to<atom::follow, std::string>,
  // INTERNAL: expires unrenewed leases; retries waiting acquires; writes
  // the record (an owner replica).
  caf::reacts_to<atom::sweep>,
  caf::reacts_to<atom::tick>,
  caf::reacts_to<atom::flush>>;

/// The LEASE OWNER ELECTION (control-plane replicas on one database;
/// detached: libpqxx blocks): holds a PostgreSQL advisory lock to own the
/// fleet's leases, or learns which replica does; the owner writes what it
/// counts to the shared record.
using lease_owner_actor = caf::typed_actor<
  // The owner's counts, all of them; written as the difference to the
  // last write, in one transaction.
  caf::replies_to<atom::put, std::vector<lease_row>>::with<atom::ok>,
  // What the record holds now: a follower's view of who holds what (as
  // the owner last wrote it, a tenth of a second behind at most).
  caf::replies_to<atom::get>::with<std::vector<lease_row>>,
  // INTERNAL: try for the lock, or check that it is still held.
  caf::reacts_to<atom::tick>>;

/// The LEASE FORWARDER (a replica that does not own the leases): sends a
/// worker's lease call on to the owner and its answer back.
using lease_forwarder_actor = caf::typed_actor<
  caf::replies_to<atom::acquire, worker_api::lease_call>::with<worker_api::acquire_answer>,
  caf::replies_to<atom::release, worker_api::lease_call>::with<worker_api::acquire_answer>,
  caf::replies_to<atom::renew, worker_api::lease_call>::with<worker_api::acquire_answer>,
  caf::replies_to<atom::sweep_lock, worker_api::sweep_verb, worker_api::sweep_call>::with<
    worker_api::sweep_answer>,
  // Where the owner is ("": unknown, calls are refused as unavailable).
  caf::reacts_to<atom::follow, std::string>,
  // INTERNAL: the owner's answer to forwarded call n.
  caf::reacts_to<atom::leased, uint64_t, http_outcome>,
  caf::reacts_to<atom::swept, uint64_t, http_outcome>>;

/// CAPACITY (worker, coordination.mode: controlPlane): leases the slots
/// its queries need from the control plane, one call at a time carrying
/// every cluster's demand, and gives back what it no longer needs.
using capacity_actor = caf::typed_actor<
  // A cluster's demand changed (a query found no granted slot, or one
  // finished).
  caf::reacts_to<atom::want>,
  // What /worker/status shows.
  caf::replies_to<atom::get>::with<capacity_status>,
  // Shutdown: gives back every lease (answers once the control plane
  // heard, or could not be reached).
  caf::replies_to<atom::drain>::with<atom::ok>,
  // INTERNAL: time to look at the demand (true: the renewal timer).
  caf::reacts_to<atom::tick, bool>,
  // INTERNAL: the answer to the call of sequence number n; the call
  // under way goes again (after a backoff).
  caf::reacts_to<atom::leased, uint64_t, http_outcome>,
  caf::reacts_to<atom::renew>,
  // A control-plane replica's own queries: this replica owns the leases
  // (admit on its own limits) ...
  caf::reacts_to<atom::leader>,
  // ... or another does, at this URL ("": none known; admit nothing new).
  caf::reacts_to<atom::follow, std::string>>;

/// The ENGINE RECONCILER (every node that shares capacity): takes the
/// engine-reconcile sweep lock every health-check interval; the holder's
/// health checks ask the engines for their running counts and it
/// publishes them, every other node reads them.
using engine_reconciler_actor = caf::typed_actor<
  // What /worker/status shows.
  caf::replies_to<atom::get>::with<reconcile_status>,
  // Shutdown: gives the lock up so that another node counts at once.
  caf::replies_to<atom::drain>::with<atom::ok>,
  // INTERNAL: time to take the lock again; the answer to call n over HTTP.
  caf::reacts_to<atom::tick>,
  caf::reacts_to<atom::swept, uint64_t, http_outcome>>;

/// The CONTROL PLANE LINK (worker): long-polls for snapshots, verifies and
/// activates them, heartbeats, backs off, and bootstraps from a peer.
using control_plane_link_actor = caf::typed_actor<
  // What /worker/status shows of the link.
  caf::replies_to<atom::get>::with<link_status>,
  // Shutdown: a last heartbeat says the worker is draining.
  caf::replies_to<atom::drain>::with<atom::ok>,
  // INTERNAL: asks the control plane for a snapshot now.
  caf::reacts_to<atom::poll>,
  // INTERNAL: the answer to the poll of generation `n`.
  caf::reacts_to<atom::polled, uint64_t, http_outcome>,
  // INTERNAL: time for a heartbeat (true: the interval's timer), and its
  // answer.
  caf::reacts_to<atom::heartbeat, bool>,
  caf::reacts_to<atom::beaten, http_outcome>,
  // INTERNAL: peer bootstrap: time to look, the peers' addresses, and one
  // peer's answer (by its place in the list).
  caf::reacts_to<atom::bootstrap>,
  caf::reacts_to<atom::resolved, std::vector<std::string>>,
  caf::reacts_to<atom::copied, size_t, http_outcome>>;

/// The HISTORY SPOOL (worker): sends the records its queries leave in the
/// spool (a bounded outbox they push to without a message) to the control
/// plane or the history endpoint, redacted, in batches, one at a time,
/// retried with backoff.
using history_spool_actor = caf::typed_actor<
  // What /worker/status shows (historyUplink).
  caf::replies_to<atom::get>::with<uplink_status>,
  // Shutdown, after the drain: sends what is spooled without pausing
  // between batches (retrying failures); answers how many records are
  // left, once none are or the destination refuses.
  caf::replies_to<atom::flush>::with<uint64_t>,
  // INTERNAL: time to look at the spool (only the latest planned tick
  // counts); the answer to batch n.
  caf::reacts_to<atom::tick, uint64_t>,
  caf::reacts_to<atom::delivered, uint64_t, http_outcome>>;

} // namespace qf
