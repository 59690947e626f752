// One running gateway node: builds the actors of a config (clusters, groups,
// history, snapshot holder) and hands the boundary what it needs.
#pragma once

#include "actors/control/history_outbox.hpp"
#include "actors/core/interfaces.hpp"
#include "actors/control/history_ring.hpp"
#include "actors/data/cluster.hpp"
#include "actors/data/cluster_state.hpp"
#include "actors/data/group_gate.hpp"
#include "actors/data/query_registry.hpp"
#include "actors/node/metrics.hpp"
#include "actors/routing/router_chain.hpp"
#include "protocols/config/fleet.hpp"
#include "protocols/config/model.hpp"

#include <caf/actor.hpp>
#include <caf/fwd.hpp>
#include <caf/timespan.hpp>

#include <atomic>
#include <map>
#include <memory>
#include <optional>

namespace qf {

/// A compiled config plus the live actors it runs on. Immutable once built.
struct active_config {
  std::shared_ptr<const config::gateway_config> config;
  /// The fleet part of `config` as stored (JSON per item), which admin
  /// changes edit.
  config::fleet fleet;
  std::unique_ptr<routing::router_chain> routes;
  std::map<std::string, caf::actor, std::less<>> groups;
  /// Each group's placement and queue length, shared by its actor and
  /// the PostgreSQL wire fast lane.
  std::map<std::string, std::shared_ptr<group_gate>, std::less<>> group_gates;
  std::map<std::string, std::shared_ptr<cluster_state>, std::less<>> clusters;
};

/// The hot path's view of the active config: an atomic pointer, no message.
class snapshot_cell {
public:
  std::shared_ptr<const active_config> load() const {
    return ptr_.load();
  }

  void store(std::shared_ptr<const active_config> next) {
    ptr_.store(std::move(next));
  }

private:
  std::atomic<std::shared_ptr<const active_config>> ptr_;
};

/// What query and session actors share on one node.
struct node_services {
  caf::actor_system* sys = nullptr;
  std::shared_ptr<metrics> stats;
  std::shared_ptr<query_registry> queries;
  /// Wire sessions by their cancel key ("pid:secret" for PostgreSQL), for
  /// CancelRequest and KILL. A PostgreSQL session's summary shows its
  /// fast-lane statement while one runs.
  std::shared_ptr<query_registry> wire_sessions;
  /// Running statements of wire sessions on the actor path, for the admin
  /// API (apart from `queries`, whose entries Trino's nextUri reaches).
  std::shared_ptr<query_registry> wire_statements;
  std::shared_ptr<snapshot_cell> snapshot;
  std::shared_ptr<first_health_round> first_round;
  std::shared_ptr<history_ring> history;
  /// Where finished records go on to: with PostgreSQL persistence the
  /// history store's queue (the store also answers the admin API's history
  /// reads); on a worker the history spool, bound upstream.
  std::shared_ptr<history_outbox> outbox;
  caf::actor history_store;
  /// Where workers are served on PostgreSQL: history stores of their own
  /// connection (and an empty outbox) that write workers' batches, taken
  /// in turn, so that ten workers' ingest is not one connection's.
  std::vector<caf::actor> history_writers;
  std::atomic<size_t> next_writer{0};
  /// Every change to the fleet goes through it (first to PostgreSQL when
  /// the config lives there). None on a worker.
  caf::actor config_writer;
  snapshot_holder_actor snapshot_holder;
  config::node_role role = config::node_role::standalone;
  /// Where workers are served (workerApi.enabled): the snapshot side of
  /// the config store and the worker registry.
  config_store_actor config_store;
  worker_registry_actor worker_registry;
  /// The fleet's capacity leases (where workers are served).
  lease_table_actor lease_table;
  /// On a worker with coordination.mode: controlPlane: its leases.
  capacity_actor capacity;
  /// Where the fleet reconciles engine counts (a control plane serving
  /// workers, a worker sharing capacity): who counts, and the lock.
  engine_reconciler_actor reconciler;
  /// On a worker: its history uplink.
  history_spool_actor history_spool;
  /// On a worker: the link to its control plane, its name and labels.
  control_plane_link_actor control_plane;
  std::string worker_name;
  std::map<std::string, std::string> worker_labels;
  std::string external_address;
  config::trino_http_frontend trino;
  std::atomic<uint64_t> next_ticket{1};
  /// Random per process: with the date it keeps query ids unique across
  /// restarts, which durable history (first record per id wins) needs.
  std::string node_suffix;

  /// Trino's shape, date_time_counter_node, plus the ticket; wire
  /// protocols prefix theirs ("pg_", "my_").
  std::string query_id(uint64_t ticket, std::string_view prefix = {}) const;
  /// Set on SIGTERM: new queries are refused, running ones finish.
  std::atomic<bool> draining{false};
  /// Queries whose client has not yet received their last page.
  std::atomic<int64_t> in_flight{0};

  /// A query ended: its metrics (through `series` when the caller keeps
  /// its route's), then its history record.
  void record_finished(query_record r, double seconds,
                       metrics::route_series* series = nullptr) const;

  /// The statements of every frontend between arrival and their end (a
  /// finished Trino query lingers in `queries` for its last poll).
  std::vector<statement_view> unfinished_statements() const;

  /// Ready once a snapshot is active and every cluster had a first check;
  /// not ready while draining, so that load balancers move away.
  bool ready() const {
    return snapshot->load() != nullptr && first_round->done()
           && !draining.load();
  }
};

/// What a worker node needs besides its config.
struct worker_identity {
  /// The worker's name (workerName, else the host name) and its labels
  /// (workerLabels with the labels file merged over them).
  std::string name;
  std::map<std::string, std::string> labels;
  /// How the control plane and peers are reached (net/http/client).
  std::shared_ptr<http_transport> transport;
};

/// What the composition (and tests, never a config) give a node besides
/// its config.
struct node_options {
  /// The lease table's grace after start (no new grants before it ends).
  std::optional<caf::timespan> lease_grace;
  /// A control plane on PostgreSQL serving workers: how it reaches the
  /// replica that owns the fleet's leases.
  std::shared_ptr<http_transport> replica_transport;
};

/// Spawns the node's actors for cfg; stop() (or the destructor) ends them.
class node {
public:
  /// `fleet` is cfg's fleet part as stored (JSON per item) and
  /// `config_text` the config file; admin changes edit the one and
  /// validate the result with the other. A worker (`worker` set) starts
  /// with no fleet and compiles each snapshot on `config_text`.
  node(caf::actor_system& sys, const config::gateway_config& cfg, config::fleet fleet,
       std::string config_text, std::optional<worker_identity> worker = std::nullopt,
       node_options options = {});
  ~node();

  node(const node&) = delete;
  node& operator=(const node&) = delete;

  std::shared_ptr<node_services> services() const {
    return services_;
  }

  /// Writes the queued query history (PostgreSQL persistence) before the
  /// node stops; waits at most `timeout`.
  void flush_history(std::chrono::milliseconds timeout);

  /// A worker sends its spooled history upstream after the drain (while
  /// its HTTP client still runs); waits at most `timeout`.
  void flush_uplink(std::chrono::milliseconds timeout);

  /// A worker's last heartbeat says it is draining; waits at most
  /// `timeout` for the control plane to hear it.
  void announce_drain(std::chrono::milliseconds timeout);

  /// A worker sharing capacity gives its leases back once its queries
  /// ended; waits at most `timeout` for the control plane to hear it.
  void release_capacity(std::chrono::milliseconds timeout);

  /// A node holding the engine-reconcile lock gives it up, so that
  /// another node counts from its next tick; waits at most `timeout`.
  void release_sweep_lock(std::chrono::milliseconds timeout);

  /// A control plane on PostgreSQL serving workers, once its admin port
  /// listens: runs for owning the fleet's leases, reachable at `url` by
  /// the other replicas (nothing happens on other nodes).
  void elect_lease_owner(const std::string& url);

  void stop();

private:
  std::shared_ptr<node_services> services_;
  std::vector<caf::actor> actors_;
  /// Set on a control plane whose leases are replicated.
  std::string database_url_;
  std::string replica_name_;
};

} // namespace qf
