#include "actors/node/engine_reconciler.hpp"

#include "actors/control/lease_forwarder.hpp"
#include "actors/data/query_registry.hpp"
#include "actors/node/metrics.hpp"
#include "actors/node/node.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace qf {

namespace {

using namespace std::chrono_literals;
using self_ptr = engine_reconciler_actor::stateful_pointer<engine_reconciler_state>;
using worker_api::sweep_verb;

/// The health checks' interval: the active config's monitor.taskDelay (a
/// worker's comes with its snapshot); before one, soon, to look again.
std::chrono::milliseconds interval(self_ptr self) {
  auto active = self->state.cfg.cell->load();
  return active ? std::chrono::duration_cast<std::chrono::milliseconds>(
                    caf::timespan{active->config->health.task_delay})
                : std::chrono::milliseconds{250};
}

/// The lock's TTL for an interval: three of them, at least three seconds.
uint32_t reconcile_lock_ttl_secs(caf::timespan interval) {
  auto secs = std::chrono::duration_cast<std::chrono::seconds>(3 * interval).count();
  return static_cast<uint32_t>(std::clamp<int64_t>(secs, 3, 3600));
}

void schedule_tick(self_ptr self) {
  auto& st = self->state;
  if (st.draining)
    return;
  auto every = interval(self);
  std::uniform_int_distribution<int64_t> jitter{0, every.count() / 10};
  self->delayed_send(self, every + std::chrono::milliseconds(jitter(st.rng)), atom::tick::value);
}

void set_counting(self_ptr self, bool on) {
  self->state.status.counting = on;
  self->state.cfg.counting->store(on);
}

void drained(self_ptr self) {
  for (auto& p : self->state.drain_waiters)
    p.deliver(atom::ok::value);
  self->state.drain_waiters.clear();
}

/// The published counts into this node's clusters; a node that counts on
/// its own keeps what its health checks read.
void use_counts(self_ptr self, const std::vector<worker_api::engine_count>& counts) {
  auto& st = self->state;
  if (st.status.counting)
    return;
  auto active = st.cfg.cell->load();
  if (!active)
    return;
  auto max_age = static_cast<uint64_t>(3 * interval(self).count() + 5000);
  for (const auto& [name, cluster] : active->clusters) {
    uint32_t running = 0;
    for (const auto& c : counts)
      if (c.cluster == name && c.age_ms <= max_age)
        running = c.running;
    cluster->reported_load.store(running);
  }
}

/// What this node's health checks counted since it took the lock.
std::vector<worker_api::engine_count> samples(self_ptr self) {
  std::vector<worker_api::engine_count> out;
  auto active = self->state.cfg.cell->load();
  if (!active)
    return out;
  for (const auto& [name, cluster] : active->clusters)
    if (cluster->counted_at_ms.load() >= self->state.held_since_ms)
      out.push_back({name, cluster->reported_load.load(), {}, 0});
  return out;
}

void failed(self_ptr self, std::string why) {
  auto& st = self->state;
  if (st.draining)
    return drained(self);
  ++st.status.failures;
  st.cfg.stats->coordination_failed("sweep_lock");
  if (st.status.last_error != why)
    spdlog::warn("engine reconciliation: {}; this node asks the engines itself", why);
  st.status.last_error = std::move(why);
  st.status.holds_lock = false;
  set_counting(self, true); // fail open
  schedule_tick(self);
}

/// A publish found the lock expired (another node may hold it now): the
/// next tick asks again.
void lost_lock(self_ptr self) {
  self->state.status.holds_lock = false;
  schedule_tick(self);
}

void send(self_ptr self, sweep_verb verb);

void answered(self_ptr self, sweep_verb verb, worker_api::sweep_answer& a) {
  auto& st = self->state;
  if (st.draining && verb != sweep_verb::release)
    return; // the release under way (if any) answers the drain
  st.status.last_error.clear();
  switch (verb) {
    case sweep_verb::acquire:
      st.status.lock_holder = a.holder;
      if (a.granted) {
        if (!st.status.holds_lock || st.token != a.token)
          st.held_since_ms = steady_ms();
        st.status.holds_lock = true;
        st.token = a.token;
        set_counting(self, true);
        return send(self, sweep_verb::publish);
      }
      st.status.holds_lock = false;
      set_counting(self, false);
      return send(self, sweep_verb::counts);
    case sweep_verb::publish:
    case sweep_verb::counts:
      use_counts(self, a.counts);
      return schedule_tick(self);
    case sweep_verb::release:
      st.status.holds_lock = false;
      return drained(self);
  }
}

void send(self_ptr self, sweep_verb verb) {
  auto& st = self->state;
  worker_api::sweep_call c;
  c.name = std::string{worker_api::engine_reconcile_lock};
  c.holder = st.cfg.holder;
  c.token = st.token;
  c.ttl_secs = reconcile_lock_ttl_secs(interval(self));
  if (verb == sweep_verb::publish)
    c.counts = samples(self);
  if (st.cfg.table) {
    self->request(st.cfg.table, 5s, atom::sweep_lock::value, verb, std::move(c))
      .then([self, verb](worker_api::sweep_answer& a) { answered(self, verb, a); },
            [self, verb](caf::error& err) {
              if (verb == sweep_verb::publish && code_of(err) == errc::lease_not_held)
                return lost_lock(self);
              failed(self, message_of(err));
            });
    return;
  }
  st.call_id += 1;
  st.call_verb = verb;
  send_for<engine_reconciler_actor>(*st.cfg.transport,
                                    sweep_lock_call(st.cfg.url, st.cfg.shared_secret, verb, c),
                                    self, atom::swept::value, st.call_id);
}

void heard(self_ptr self, uint64_t id, http_outcome& o) {
  auto& st = self->state;
  if (id != st.call_id)
    return;
  auto verb = st.call_verb;
  if (o.status == 200) {
    if (auto a = worker_api::decode_sweep_answer(verb, o.body))
      return answered(self, verb, *a);
    return failed(self, "the control plane's sweep-lock answer is not one: "
                          + o.body.substr(0, 200));
  }
  if (o.status == 409 && verb == sweep_verb::publish)
    return lost_lock(self);
  failed(self, "the control plane's sweep lock: " + o.describe());
}

} // namespace

engine_reconciler_actor::behavior_type
engine_reconciler(engine_reconciler_actor::stateful_pointer<engine_reconciler_state> self,
                  engine_reconciler_settings cfg) {
  self->state.cfg = std::move(cfg);
  self->state.status.counting = self->state.cfg.counting->load();
  self->send(self, atom::tick::value);
  return {
    [self](atom::get) { return self->state.status; },
    [self](atom::drain) -> caf::result<atom::ok> {
      auto& st = self->state;
      st.draining = true;
      if (!st.status.holds_lock)
        return atom::ok::value;
      auto promise = self->make_response_promise<atom::ok>();
      st.drain_waiters.push_back(promise);
      if (st.drain_waiters.size() == 1)
        send(self, sweep_verb::release);
      return promise;
    },
    [self](atom::tick) {
      if (self->state.draining)
        return;
      // Without a config there is nothing to count, and no interval to
      // hold the lock for: a worker waits for its first snapshot.
      if (!self->state.cfg.cell->load())
        return schedule_tick(self);
      send(self, sweep_verb::acquire);
    },
    [self](atom::swept, uint64_t id, http_outcome& o) { heard(self, id, o); },
  };
}

} // namespace qf
