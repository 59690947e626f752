// A cluster's live numbers, shared by its cluster actor (which owns health),
// the groups that admit onto it and the queries that run on it. Atomics, so
// admission never waits for a message round trip.
#pragma once

#include "actors/core/messages.hpp"

#include <caf/actor.hpp>

#include <atomic>
#include <mutex>
#include <optional>
#include <cstdint>
#include <string>
#include <vector>

namespace qf {

/// The health cache states of the spec.
enum class health { pending, healthy, unhealthy, unknown };

std::string_view to_string(health h);

struct cluster_state {
  cluster_state(std::string name_, std::string engine_type_, uint32_t limit_,
                bool enabled_, uint32_t pool_size_ = 0)
    : name(std::move(name_)),
      engine_type(std::move(engine_type_)),
      limit(limit_),
      pool_size(pool_size_ == 0 ? limit_ : pool_size_),
      enabled(enabled_),
      status(enabled_ ? health::pending : health::unknown) {
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
  std::atomic<uint32_t> running{0};

  /// The cluster actor: lends connections, runs health checks.
  caf::actor actor;
  /// A group with this cluster as a member, and its queue length.
  struct group_link {
    caf::actor actor;
    std::shared_ptr<const std::atomic<uint32_t>> queued;
  };

  /// Told when a slot frees up (only groups with waiters) or health returns.
  std::vector<group_link> groups;

  /// Enabled and HEALTHY: the only clusters that receive queries.
  bool routable() const {
    return enabled.load() && status.load() == health::healthy;
  }

  /// Takes a slot if one is free. Safe against concurrent groups.
  bool try_acquire();

  /// Returns a slot and tells every group that it may admit again.
  void release();

  /// Tells the groups that this cluster may take queries again; with
  /// waiting_only, only those with a queue (the common case has none).
  void notify_groups(bool waiting_only = false) const;

  /// An idle connection, if any: queries borrow without a message hop.
  std::optional<conn_lease> take_idle();

  /// Keeps a connection for reuse; false when the pool is full, and the
  /// caller then asks the cluster actor to end it.
  bool give_back(conn_lease& lease);

  /// Empties the pool (the cluster actor ends the connections).
  void clear_idle();

private:
  std::mutex pool_mtx_;
  std::vector<conn_lease> idle_;
};

} // namespace qf
