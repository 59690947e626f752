// Admission onto a group's members without a queue: what the group actor
// does for a newcomer when nobody waits, shared with the PostgreSQL and
// MySQL wire fast lanes so that a statement there is admitted by a
// compare-and-swap on its own thread, with no message round trip.
//
// THE WAITING LANE: a wire statement that finds no slot while no statement
// of the actor path waits queues here instead, and whoever frees a slot
// hands it over on its own thread (a statement ending on the wire thread:
// no other thread woken at all). The group actor's FIFO queue comes after
// the lane: an actor-path statement queues behind the lane's waiters, and a
// wire statement goes to the group actor too once anyone waits there, so
// that everyone is served in arrival order.
#pragma once

#include "actors/data/cluster_state.hpp"
#include "actors/routing/strategy.hpp"
#include "protocols/config/model.hpp"

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

namespace qf {

class metrics;

/// What a statement that waited capacityWaitTimeoutSecs in a group's queue
/// (the actor's or the lane) is told.
std::string queue_timeout_message(const std::string& group, std::chrono::seconds waited);

class group_gate {
public:
  /// `stats`, when given, shows the queue length (the group actor's and
  /// the lane's) as queryflux_queued_queries.
  group_gate(config::cluster_group cfg, std::vector<std::shared_ptr<cluster_state>> members,
             std::shared_ptr<metrics> stats = nullptr);

  const config::cluster_group& cfg() const {
    return cfg_;
  }

  /// The queue length: the group actor's queue and the lane's waiters.
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

  /// Takes a slot on a member the strategy chooses for a query of
  /// `user` (queryCountBased weighs the user's queued queries), or
  /// returns null.
  std::shared_ptr<cluster_state> try_place(std::string_view user = {});

  /// try_place() for a newcomer: only when the group is enabled and
  /// nobody queues, so that no one is overtaken.
  std::shared_ptr<cluster_state> try_place_newcomer(std::string_view user = {});

  /// Whether the cluster is one of this group's members.
  bool has_member(const cluster_state& cluster) const;

  /// A slot on the named member only, if it is routable and has one: a
  /// session whose own state lives on a connection there.
  std::shared_ptr<cluster_state> try_place_on(std::string_view name);

  /// try_place_on() for a newcomer: only when nobody queues.
  std::shared_ptr<cluster_state> try_place_newcomer_on(std::string_view name);

  /// A wire statement waiting in the lane.
  struct lane_waiter {
    uint64_t ticket = 0;
    /// The member it must run on (its session's state lives there), or "".
    std::string only;
    /// Who sent it (queryCountBased).
    std::string user;
    /// Called once, on the thread that freed the slot: with the slot, or
    /// with null when the group was replaced (it waits on the actor path
    /// then). Must not call back into the gate.
    std::function<void(std::shared_ptr<cluster_state>)> admit;
  };

  /// Queues w, unless statements wait in the group actor's queue (they
  /// came first), the queue is full or the group is disabled: false then,
  /// and w is the caller's still. May admit w before it returns.
  bool wait_in_lane(lane_waiter& w);

  /// Takes the waiter out: false when it was handed a slot already (its
  /// admit runs or ran).
  bool leave_lane(uint64_t ticket);

  /// Hands free slots to the lane's waiters in order (one that must run on
  /// a full member lets those behind it go); true when waiters remain.
  /// Called whenever a member frees a slot or gains room.
  bool serve_lane();

  /// Whether anyone waits in the lane.
  bool lane_waiting() const;

  /// The group actor's queue length (its part of queued()).
  void set_actor_queued(uint32_t n);
  uint32_t actor_queued() const {
    return actor_queued_.load();
  }

  /// The group was replaced: the lane's waiters are told (admit(null)),
  /// and none is taken any more.
  void close_lane();

private:
  /// queued() and the metric, under lane_mtx_.
  void publish_queued();

  const config::cluster_group cfg_;
  const std::vector<std::shared_ptr<cluster_state>> members_;
  const bool postgres_only_;
  const bool mysql_only_;
  std::shared_ptr<std::atomic<uint32_t>> queued_
    = std::make_shared<std::atomic<uint32_t>>(0);
  std::mutex strategy_mtx_; // round-robin position and random state
  routing::strategy_state strategy_;
  std::shared_ptr<metrics> stats_;
  mutable std::mutex lane_mtx_; // before strategy_mtx_, never after
  std::deque<lane_waiter> lane_;
  bool lane_closed_ = false;
  std::atomic<uint32_t> actor_queued_{0};
  std::atomic<uint32_t> lane_size_{0}; // lane_.size(), read without the lock
};

} // namespace qf
