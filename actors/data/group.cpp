// Group admission and its FIFO queue.
#include "actors/data/group.hpp"

#include "actors/node/metrics.hpp"

#include <caf/all.hpp>

namespace qf {

namespace {

using self_ptr = caf::stateful_actor<group_state>*;

/// Takes a slot on a member chosen by the strategy, or returns null.
std::shared_ptr<cluster_state> try_place(group_state& st) {
  if (!st.cfg.enabled)
    return nullptr;
  std::vector<routing::member_view> views;
  views.reserve(st.members.size());
  for (const auto& m : st.members)
    views.push_back({m->routable() && m->running() < m->limit, m->load()});
  // A slot can vanish to another group between the look and the take.
  for (size_t attempt = 0; attempt < views.size(); ++attempt) {
    auto chosen = routing::pick(st.cfg.strategy, views, st.strategy);
    if (!chosen)
      return nullptr;
    if (st.members[*chosen]->try_acquire())
      return st.members[*chosen];
    views[*chosen].eligible = false;
  }
  return nullptr;
}

void publish_queue_length(self_ptr self) {
  auto& st = self->state;
  st.queued->store(static_cast<uint32_t>(st.queue.size()));
  st.stats->queued_set(st.cfg.name, st.queue.size());
}

void admit_waiters(self_ptr self) {
  auto& st = self->state;
  while (!st.queue.empty()) {
    auto cluster = try_place(st);
    if (!cluster)
      break;
    auto w = std::move(st.queue.front());
    st.queue.pop_front();
    auto waited = self->clock().now() - w.since;
    st.stats->queue_wait(st.cfg.name,
                         std::chrono::duration<double>(waited).count());
    w.promise.deliver(admission{std::move(cluster)});
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
void pass_on(self_ptr self, caf::response_promise rp, uint64_t ticket) {
  auto& st = self->state;
  if (st.successor)
    rp.delegate(st.successor, atom::admit::value, ticket);
  else
    rp.deliver(make_error(errc::group_disabled,
                          "cluster group \"" + st.cfg.name + "\" was deleted"));
}

} // namespace

caf::behavior group_actor(self_ptr self, config::cluster_group cfg,
                          std::vector<std::shared_ptr<cluster_state>> members,
                          std::shared_ptr<metrics> stats,
                          std::shared_ptr<std::atomic<uint32_t>> queued) {
  self->state.cfg = std::move(cfg);
  self->state.members = std::move(members);
  self->state.stats = std::move(stats);
  self->state.queued = std::move(queued);
  publish_queue_length(self);
  return {
    [self](atom::admit, uint64_t ticket) {
      auto& st = self->state;
      auto rp = self->make_response_promise();
      if (st.retired) {
        pass_on(self, std::move(rp), ticket);
        return;
      }
      if (!st.cfg.enabled) {
        rp.deliver(make_error(errc::group_disabled,
                              "cluster group \"" + st.cfg.name
                                + "\" is disabled"));
        return;
      }
      // Waiters go first: a newcomer never overtakes the queue.
      if (st.queue.empty())
        if (auto cluster = try_place(st)) {
          st.stats->queue_wait(st.cfg.name, 0.0);
          rp.deliver(admission{std::move(cluster)});
          return;
        }
      if (st.queue.size() >= st.cfg.max_queued_queries) {
        st.stats->queue_rejected(st.cfg.name);
        rp.deliver(make_error(
          errc::queue_full,
          "cluster group \"" + st.cfg.name + "\" is at capacity and its "
            "queue is full (maxQueuedQueries: "
            + std::to_string(st.cfg.max_queued_queries) + ")"));
        return;
      }
      st.queue.push_back({ticket, std::move(rp), self->clock().now()});
      self->delayed_send(self, st.cfg.capacity_wait_timeout,
                         atom::timeout::value, ticket);
      // Published first, then retried: a slot freed in between is not lost.
      publish_queue_length(self);
      admit_waiters(self);
    },
    [self](atom::withdraw, uint64_t ticket) {
      if (self->state.retired && self->state.successor)
        self->send(self->state.successor, atom::withdraw::value, ticket);
      fail_waiter(self, ticket,
                  make_error(errc::cancelled, "query cancelled while queued"));
    },
    [self](atom::timeout, uint64_t ticket) {
      const auto& group_cfg = self->state.cfg;
      fail_waiter(self, ticket,
                  make_error(errc::queue_timeout,
                             "query waited longer than "
                             "capacityWaitTimeoutSecs ("
                               + std::to_string(
                                 group_cfg.capacity_wait_timeout.count())
                               + "s) for capacity in cluster group \""
                               + group_cfg.name + "\""));
    },
    [self](atom::release) { admit_waiters(self); },
    [self](atom::retire, caf::actor& successor) {
      auto& st = self->state;
      st.retired = true;
      st.successor = std::move(successor);
      while (!st.queue.empty()) {
        auto w = std::move(st.queue.front());
        st.queue.pop_front();
        pass_on(self, std::move(w.promise), w.ticket);
      }
      st.queued->store(0);
      if (!st.successor)
        st.stats->queued_set(st.cfg.name, 0);
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
