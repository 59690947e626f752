// The GROUP actor: admission for one cluster group. Admits while a member
// has a free slot, queues FIFO up to maxQueuedQueries, fails a waiter after
// capacityWaitTimeoutSecs, and lets the strategy choose the member.
#pragma once

#include "actors/core/messages.hpp"
#include "actors/data/cluster_state.hpp"
#include "actors/routing/strategy.hpp"
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
  };

  config::cluster_group cfg;
  std::vector<std::shared_ptr<cluster_state>> members;
  std::deque<waiter> queue;
  routing::strategy_state strategy;
  std::shared_ptr<metrics> stats;
  /// The queue length, published for clusters deciding whom to notify.
  std::shared_ptr<std::atomic<uint32_t>> queued;
  /// Replaced or deleted by an admin change; a replaced group hands its
  /// waiters, and whoever still reaches it, to its successor.
  bool retired = false;
  caf::actor successor;
};

/// Handlers:
/// - (admit, ticket) -> admission, or errc queue_full / queue_timeout /
///   cancelled / group_disabled;
/// - (withdraw, ticket): a queued caller gave up; its admit fails cancelled;
/// - (release): a member freed a slot or became healthy; admit waiters;
/// - (stats) -> uint64_t queued;
/// - (retire, successor): the group's config changed (successor: its new
///   actor) or it was deleted (an invalid handle): waiters move to the
///   successor in order, or fail; the actor ends a little later, passing
///   on meanwhile what still arrives.
caf::behavior group_actor(caf::stateful_actor<group_state>* self,
                          config::cluster_group cfg,
                          std::vector<std::shared_ptr<cluster_state>> members,
                          std::shared_ptr<metrics> stats,
                          std::shared_ptr<std::atomic<uint32_t>> queued);

} // namespace qf
