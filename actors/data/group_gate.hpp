// Admission onto a group's members without a queue: what the group actor
// does for a newcomer when nobody waits, shared with the PostgreSQL wire
// fast lane so that a statement there is admitted by a compare-and-swap on
// its own thread, with no message round trip. Whoever must wait still goes
// to the group actor, which owns the FIFO queue.
#pragma once

#include "actors/data/cluster_state.hpp"
#include "actors/routing/strategy.hpp"
#include "protocols/config/model.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

namespace qf {

class group_gate {
public:
  group_gate(config::cluster_group cfg,
             std::vector<std::shared_ptr<cluster_state>> members);

  const config::cluster_group& cfg() const {
    return cfg_;
  }

  /// The queue length, which the group actor publishes.
  const std::shared_ptr<std::atomic<uint32_t>>& queued() const {
    return queued_;
  }

  /// Every member is a PostgreSQL cluster: the fast lane may run its
  /// statements.
  bool postgres_only() const {
    return postgres_only_;
  }

  /// Every member is a MySQL cluster: the MySQL wire fast lane may run its
  /// statements.
  bool mysql_only() const {
    return mysql_only_;
  }

  /// Takes a slot on a member the strategy chooses, or returns null.
  std::shared_ptr<cluster_state> try_place();

  /// try_place() for a newcomer: only when the group is enabled and
  /// nobody queues, so that no one is overtaken.
  std::shared_ptr<cluster_state> try_place_newcomer();

  /// Whether the cluster is one of this group's members.
  bool has_member(const cluster_state& cluster) const;

  /// A slot on the named member only, if it is routable and has one: a
  /// session whose own state lives on a connection there.
  std::shared_ptr<cluster_state> try_place_on(std::string_view name);

  /// try_place_on() for a newcomer: only when nobody queues.
  std::shared_ptr<cluster_state> try_place_newcomer_on(std::string_view name);

private:
  const config::cluster_group cfg_;
  const std::vector<std::shared_ptr<cluster_state>> members_;
  const bool postgres_only_;
  const bool mysql_only_;
  std::shared_ptr<std::atomic<uint32_t>> queued_
    = std::make_shared<std::atomic<uint32_t>>(0);
  std::mutex strategy_mtx_; // round-robin position and random state
  routing::strategy_state strategy_;
};

} // namespace qf
