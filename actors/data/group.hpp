// The GROUP actor: admission for one cluster group. Admits while a member
// has a free slot, queues FIFO up to maxQueuedQueries, fails a waiter after
// capacityWaitTimeoutSecs, and lets the strategy choose the member.
#pragma once

#include "actors/core/messages.hpp"
#include "actors/data/group_gate.hpp"
#include "protocols/config/model.hpp"

#include <caf/actor_clock.hpp>
#include <caf/response_promise.hpp>
#include <caf/stateful_actor.hpp>

#include <deque>
#include <memory>
#include <vector>

namespace qf {

class metrics;

struct group_state {
  static inline const char* name = "group";

  struct waiter {
    uint64_t ticket;
    caf::response_promise promise;
    caf::actor_clock::time_point since;
    std::string only; // a member's name: admitted there or nowhere
    std::string user; // who sent it (queryCountBased)
  };

  /// The config, the members and placement; shared with the fast lane.
  std::shared_ptr<group_gate> gate;
  std::deque<waiter> queue;
  std::shared_ptr<metrics> stats;
  /// Replaced or deleted by an admin change; a replaced group hands its
  /// waiters, and whoever still reaches it, to its successor.
  bool retired = false;
  caf::actor successor;
};

/// Handlers:
/// - (admit, ticket) -> admission, or errc queue_full / queue_timeout /
///   cancelled / group_disabled;
/// - (admit, ticket, member) -> the same on that member only (a wire
///   session's own state lives on a connection there); such a waiter
///   waits for its member without holding up those behind it;
/// - (withdraw, ticket): a queued caller gave up; its admit fails cancelled;
/// - (release): a member freed a slot or became healthy; admit waiters;
/// - (stats) -> uint64_t queued;
/// - (retire, successor): the group's config changed (successor: its new
///   actor) or it was deleted (an invalid handle): waiters move to the
///   successor in order, or fail; the actor ends a little later, passing
///   on meanwhile what still arrives.
/// The queue length is published through the gate, for clusters deciding
/// whom to notify and for the fast lane, which admits only past an empty
/// queue.
caf::behavior group_actor(caf::stateful_actor<group_state>* self,
                          std::shared_ptr<group_gate> gate,
                          std::shared_ptr<metrics> stats);

} // namespace qf
