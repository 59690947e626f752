// A cluster's live numbers, shared by its cluster actor (which owns health),
// the groups that admit onto it and the queries that run on it. Atomics, so
// admission never waits for a message round trip.
#pragma once

#include "actors/core/messages.hpp"
#include "actors/data/slot_counter.hpp"

#include <caf/actor.hpp>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>
#include <cstdint>
#include <string>
#include <vector>

#include "engines/engine_load.hpp"
#include "engines/lane_pool_fwd.hpp"

namespace qf {

class group_gate;

/// The health cache states of the spec.
enum class health { pending, healthy, unhealthy, unknown };

std::string_view to_string(health h);

struct cluster_state {
  /// `in_flight` is the slot counter of the cluster this one replaces
  /// (an admin update): its queries still count against the limit, and
  /// its grant stays.
  cluster_state(std::string name_, std::string engine_type_, uint32_t limit_,
                bool enabled_, uint32_t pool_size_ = 0,
                std::shared_ptr<slot_counter> in_flight = nullptr)
    : name(std::move(name_)),
      engine_type(std::move(engine_type_)),
      limit(limit_),
      pool_size(pool_size_ == 0 ? limit_ : pool_size_),
      enabled(enabled_),
      status(enabled_ ? health::pending : health::unknown),
      running_(in_flight ? std::move(in_flight)
                         : std::make_shared<slot_counter>()) {
    // nop
  }

  const std::string name;
  const std::string engine_type;
  /// maxRunningQueries: the cluster's own, else the smallest of its groups'.
  const uint32_t limit;
  /// Idle connections kept for reuse (poolSize, default: the limit).
  const uint32_t pool_size;
  std::atomic<bool> enabled;
  std::atomic<health> status;
  /// Queries the cluster itself runs (every client's, as Trino's
  /// /v1/query or PostgreSQL's pg_stat_activity count them): this node's
  /// last count, or the one engine reconciliation published; 0 when
  /// nobody says (embedded engines).
  std::atomic<uint32_t> reported_load{0};
  /// When this node's health check last counted it (steady clock, ms; 0:
  /// never): engine reconciliation publishes those of the lock's holder,
  /// every other node's reported_load is the published count.
  std::atomic<int64_t> counted_at_ms{0};

  /// What leastLoaded weighs: our queries there, or what the cluster
  /// reported, whichever is more.
  uint32_t load() const {
    return std::max(running(), reported_load.load());
  }

  /// What queryCountBased weighs for `user`'s next query: the queries the
  /// cluster runs (ours, or what it reported, whichever is more), those
  /// it queues, and those it queues of that user.
  struct queue_view {
    uint32_t running = 0;
    uint32_t queued = 0;
    uint32_t user_queued = 0;
  };

  queue_view queue_for(std::string_view user) const;

  /// The monitor's last reading (running, queued, queued per user), good
  /// for `valid_ms`; past that queue_for() falls back to load().
  void set_engine_load(engines::engine_load load, int64_t valid_ms);

  /// A query of `user` was placed here: until the next reading it counts
  /// as queued when the user has queued queries here (the cluster will
  /// likely queue it too), as Trino Gateway's QueryCountBasedRouter does;
  /// otherwise as running, which its slot already says.
  void placed_for(std::string_view user);

  /// Queries holding a slot, shared with an updated successor.
  uint32_t running() const {
    return running_->running();
  }

  /// The slots and the node's grant, shared with an updated successor.
  const std::shared_ptr<slot_counter>& running_counter() const {
    return running_;
  }

  /// On a worker sharing its limits (coordination.mode: controlPlane): its
  /// capacity actor, told when a query finds no granted slot or gives one
  /// back (set once, before sharing).
  caf::actor capacity;

  /// On a control plane: its lease table, told when a slot frees up while
  /// a worker's acquire waits for this cluster (set once, before sharing).
  caf::actor lease_table;

  /// The cluster actor: lends connections, runs health checks.
  caf::actor actor;
  /// PostgreSQL clusters: the non-blocking connections of the wire fast
  /// lane, apart from the actor's pool (set once, before sharing).
  std::shared_ptr<engines::pg_lane_pool> lane;
  /// MySQL clusters: the same for the MySQL wire fast lane.
  std::shared_ptr<engines::mysql_lane_pool> mysql_lane;
  /// A group with this cluster as a member, its queue length, and its
  /// gate, whose waiting lane a freed slot is handed to first.
  struct group_link {
    caf::actor actor;
    std::shared_ptr<const std::atomic<uint32_t>> queued;
    std::weak_ptr<group_gate> gate;
  };

  using group_links = std::vector<group_link>;

  /// The groups told when a slot frees up (only those with waiters) or
  /// health returns; replaced whole when the fleet changes.
  void set_groups(group_links links) {
    groups_.store(std::make_shared<const group_links>(std::move(links)));
  }

  /// One more group; writers (node setup, tests) do not race each other.
  void add_group(group_link link) {
    auto links = groups_.load();
    auto next = links ? *links : group_links{};
    next.push_back(std::move(link));
    set_groups(std::move(next));
  }

  /// Enabled and HEALTHY: the only clusters that receive queries.
  bool routable() const {
    return enabled.load() && status.load() == health::healthy;
  }

  /// Queries waiting in the groups this cluster is a member of.
  uint32_t queued() const;

  /// Takes a slot if one is free (and granted, on a worker sharing its
  /// limits). Safe against concurrent groups.
  bool try_acquire();

  /// Tells the capacity actor that the demand changed (once until it has
  /// looked: a burst of queries sends one message).
  void signal_capacity();

  /// The capacity actor looks at this cluster now: later changes signal.
  void capacity_looked() {
    signalled_.store(false);
  }

  /// maxPinnedSessions (set once, before sharing).
  uint32_t max_pinned = 50;
  /// pipelineDepth (set once, before sharing).
  uint32_t pipeline_depth = 1;

  /// One more connection kept for its client's own session state, if
  /// under max_pinned: null when not. Dropping the pin gives it back.
  std::shared_ptr<void> try_pin();

  /// Connections kept for their clients now.
  uint32_t pinned() const {
    return pinned_->load();
  }

  /// Returns a slot and tells every group that it may admit again.
  void release();

  /// Tells the groups that this cluster may take queries again: their
  /// gates' waiting lanes are served here, on the caller's thread, and
  /// their actors told (with waiting_only, only those whose actor has a
  /// queue: the common case has none).
  void notify_groups(bool waiting_only = false) const;

  /// An idle connection, if any: queries borrow without a message hop.
  std::optional<conn_lease> take_idle();

  /// Keeps a connection for reuse; false when the pool is full or the
  /// cluster retired, and the caller then asks the cluster actor to end it.
  bool give_back(conn_lease& lease);

  /// Replaced or deleted: no connection is kept from now on; returns the
  /// idle ones, for the cluster actor to end.
  std::vector<conn_lease> retire_pool();

  /// Closes the fast lanes' idle connections, and keeps none from now on.
  void retire_lanes();

private:
  std::shared_ptr<slot_counter> running_;
  std::atomic<bool> signalled_{false};
  std::shared_ptr<std::atomic<uint32_t>> pinned_ = std::make_shared<std::atomic<uint32_t>>(0);
  std::atomic<std::shared_ptr<const group_links>> groups_;
  mutable std::mutex load_mtx_;
  engines::engine_load load_; // guarded by load_mtx_
  int64_t load_expires_ms_ = 0; // steady clock; guarded by load_mtx_
  std::mutex pool_mtx_;
  std::vector<conn_lease> idle_;
  bool retired_ = false; // guarded by pool_mtx_
};

} // namespace qf
