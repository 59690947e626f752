// Group admission and its FIFO queue.
#include "actors/data/group.hpp"

#include "actors/node/metrics.hpp"

#include <caf/all.hpp>

namespace qf {

namespace {

using self_ptr = caf::stateful_actor<group_state>*;

/// The gate publishes it, with the lane's waiters, as queued() and the
/// queryflux_queued_queries gauge.
void publish_queue_length(self_ptr self) {
  auto& st = self->state;
  st.gate->set_actor_queued(static_cast<uint32_t>(st.queue.size()));
}

/// In order, after the gate's lane (whose waiters came first); one
/// waiting for a member with no room lets those behind it go, anyone else
/// stops the round (no member had room for it).
void admit_waiters(self_ptr self) {
  auto& st = self->state;
  if (st.gate->serve_lane())
    return; // the lane's waiters still wait: nobody behind them goes
  for (auto w = st.queue.begin(); w != st.queue.end();) {
    auto cluster = w->only.empty() ? st.gate->try_place(w->user) : st.gate->try_place_on(w->only);
    if (!cluster) {
      if (w->only.empty())
        break;
      ++w;
      continue;
    }
    auto waited = self->clock().now() - w->since;
    st.stats->queue_wait(st.gate->cfg().name,
                         std::chrono::duration<double>(waited).count());
    w->promise.deliver(admission{std::move(cluster)});
    w = st.queue.erase(w);
  }
  publish_queue_length(self);
}

/// Removes a waiter and fails its admit with the given error.
void fail_waiter(self_ptr self, uint64_t ticket, caf::error err) {
  auto& q = self->state.queue;
  for (auto i = q.begin(); i != q.end(); ++i)
    if (i->ticket == ticket) {
      i->promise.deliver(std::move(err));
      q.erase(i);
      publish_queue_length(self);
      return;
    }
}

/// A retired group's caller: to the successor, which queues it anew, or
/// failed when the group is gone.
void pass_on(self_ptr self, caf::response_promise rp, uint64_t ticket, std::string only,
             std::string user) {
  auto& st = self->state;
  if (st.successor)
    rp.delegate(st.successor, atom::admit::value, ticket, std::move(only), std::move(user));
  else
    rp.deliver(make_error(errc::group_disabled,
                          "cluster group \"" + st.gate->cfg().name + "\" was deleted"));
}

/// A caller asks for a slot: at once when nobody waits and there is one,
/// else in the queue, up to its length.
void admit(self_ptr self, uint64_t ticket, std::string only, std::string user) {
  auto& st = self->state;
  auto rp = self->make_response_promise();
  if (st.retired) {
    pass_on(self, std::move(rp), ticket, std::move(only), std::move(user));
    return;
  }
  if (!st.gate->cfg().enabled) {
    rp.deliver(make_error(errc::group_disabled,
                          "cluster group \"" + st.gate->cfg().name + "\" is disabled"));
    return;
  }
  // Waiters go first (the lane's and the queue's): a newcomer never
  // overtakes them.
  if (st.queue.empty() && !st.gate->lane_waiting())
    if (auto cluster = only.empty() ? st.gate->try_place(user) : st.gate->try_place_on(only)) {
      st.stats->queue_wait(st.gate->cfg().name, 0.0);
      rp.deliver(admission{std::move(cluster)});
      return;
    }
  if (st.gate->queued()->load() >= st.gate->cfg().max_queued_queries) {
    st.stats->queue_rejected(st.gate->cfg().name);
    rp.deliver(make_error(
      errc::queue_full,
      "cluster group \"" + st.gate->cfg().name + "\" is at capacity and its "
        "queue is full (maxQueuedQueries: "
        + std::to_string(st.gate->cfg().max_queued_queries) + ")"));
    return;
  }
  st.queue.push_back({ticket, std::move(rp), self->clock().now(), std::move(only),
                      std::move(user)});
  self->delayed_send(self, st.gate->cfg().capacity_wait_timeout, atom::timeout::value, ticket);
  // Published first, then retried: a slot freed in between is not lost.
  publish_queue_length(self);
  admit_waiters(self);
}

} // namespace

caf::behavior group_actor(self_ptr self, std::shared_ptr<group_gate> gate,
                          std::shared_ptr<metrics> stats) {
  self->state.gate = std::move(gate);
  self->state.stats = std::move(stats);
  publish_queue_length(self);
  return {
    [self](atom::admit, uint64_t ticket) { admit(self, ticket, {}, {}); },
    [self](atom::admit, uint64_t ticket, std::string& only) {
      admit(self, ticket, std::move(only), {});
    },
    [self](atom::admit, uint64_t ticket, std::string& only, std::string& user) {
      admit(self, ticket, std::move(only), std::move(user));
    },
    [self](atom::withdraw, uint64_t ticket) {
      if (self->state.retired && self->state.successor)
        self->send(self->state.successor, atom::withdraw::value, ticket);
      fail_waiter(self, ticket,
                  make_error(errc::cancelled, "query cancelled while queued"));
    },
    [self](atom::timeout, uint64_t ticket) {
      const auto& group_cfg = self->state.gate->cfg();
      fail_waiter(self, ticket,
                  make_error(errc::queue_timeout,
                             queue_timeout_message(group_cfg.name,
                                                   group_cfg.capacity_wait_timeout)));
    },
    [self](atom::release) { admit_waiters(self); },
    [self](atom::retire, caf::actor& successor) {
      auto& st = self->state;
      st.retired = true;
      st.successor = std::move(successor);
      st.gate->close_lane(); // its waiters queue on the actor path, at the successor
      while (!st.queue.empty()) {
        auto w = std::move(st.queue.front());
        st.queue.pop_front();
        pass_on(self, std::move(w.promise), w.ticket, std::move(w.only), std::move(w.user));
      }
      st.gate->queued()->store(0);
      if (!st.successor) // else the successor's gate shows the name's queue
        st.stats->queued_set(st.gate->cfg().name, 0);
      // Statements that read the config before the change may still come.
      self->delayed_send(self, std::chrono::seconds(10), atom::close::value);
    },
    [self](atom::close) {
      if (self->state.retired)
        self->quit();
    },
    [self](atom::stats) {
      return static_cast<uint64_t>(self->state.queue.size());
    },
  };
}

} // namespace qf
