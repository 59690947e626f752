#include "actors/worker/capacity.hpp"

#include "actors/data/slot_counter.hpp"
#include "actors/node/metrics.hpp"
#include "actors/node/node.hpp"

#include <caf/all.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

namespace qf {

namespace {

using namespace std::chrono_literals;
using self_ptr = capacity_actor::stateful_pointer<capacity_state>;
using worker_api::lease_verb;

/// How long the control plane may hold an acquire that finds no slot.
constexpr uint32_t acquire_wait_ms = 250;
constexpr auto call_timeout = 5s;
constexpr auto max_backoff = 2s;
/// How often a worker holding slots checks whether others wait for them.
constexpr auto probe_every = 250ms;
/// How long an idle slot is kept when nobody else waits: queries that come
/// within it take no call.
constexpr auto linger = 20ms;

caf::weak_actor_ptr handle_of(self_ptr self) {
  return caf::actor_cast<caf::weak_actor_ptr>(self->ctrl());
}

void post(const caf::weak_actor_ptr& to, uint64_t seq, http_outcome o) {
  if (auto strong = caf::actor_cast<caf::strong_actor_ptr>(to))
    caf::anon_send(caf::actor_cast<capacity_actor>(strong), atom::leased::value, seq,
                   std::move(o));
}

std::chrono::seconds interval(const capacity_state& st) {
  return st.cfg->control_plane.heartbeat_interval;
}

worker_api::lease_call new_call(self_ptr self) {
  auto& st = self->state;
  worker_api::lease_call c;
  c.worker = st.cfg->worker_name;
  c.incarnation = st.cfg->incarnation;
  c.heartbeat_interval_secs = static_cast<uint32_t>(interval(st).count());
  return c;
}

/// Sends a call, numbered next unless it is a repeat (numbered already).
void send(self_ptr self, lease_verb verb, worker_api::lease_call body) {
  auto& st = self->state;
  if (body.seq == 0)
    body.seq = st.next_seq++;
  st.last_sent = self->clock().now();
  ++st.calls_total;
  st.in_flight = capacity_state::call{verb, std::move(body), st.last_sent};
  const auto& c = *st.in_flight;
  http_call call;
  call.method = "POST";
  call.url = st.url + "/worker/capacity/" + std::string{to_string(verb)};
  call.headers = {{"Authorization", "Bearer " + st.cfg->control_plane.shared_secret},
                  {"Content-Type", "application/json"}};
  call.body = worker_api::encode(verb, c.body);
  // Well inside the leases' TTL (three intervals), so that a worker whose
  // call hangs knows it in time to stop admitting (failClosed).
  call.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(
    std::min<caf::timespan>(call_timeout, interval(st)) + std::chrono::milliseconds(c.body.wait_ms));
  st.cfg->transport->send(std::move(call), [to = handle_of(self), seq = c.body.seq](
                                              http_outcome o) { post(to, seq, std::move(o)); });
}

/// The clusters of the active config this actor leases for.
std::shared_ptr<const active_config> active_of(self_ptr self) {
  return self->state.cfg->cell->load();
}

capacity_state::holding& holding_for(self_ptr self, const std::string& name,
                                     const cluster_state& c) {
  auto& h = self->state.clusters[name];
  h.counter = c.running_counter();
  return h;
}

/// Tells the control plane everything the worker holds: after an outage
/// or a restart of either side, what it runs now; at a drain, nothing
/// beyond what still runs.
void send_renew(self_ptr self) {
  auto& st = self->state;
  auto call = new_call(self);
  auto active = active_of(self);
  for (auto& [name, h] : st.clusters) {
    uint32_t count = h.held;
    if (st.resync || st.draining)
      count = h.counter ? h.counter->running() : 0;
    call.items.push_back({name, "", count});
  }
  if (active)
    for (const auto& [name, c] : active->clusters)
      if (c->capacity && !st.clusters.contains(name)) {
        holding_for(self, name, *c);
        call.items.push_back({name, "", st.resync ? c->running() : 0u});
      }
  send(self, lease_verb::renew, std::move(call));
}

/// A group of `c` to name in an acquire: one whose queries wait, if any.
std::string group_of(const active_config& active, const cluster_state& c) {
  std::string any;
  for (const auto& [name, gate] : active.group_gates)
    if (gate->has_member(c)) {
      if (gate->queued()->load() > 0)
        return name;
      if (any.empty())
        any = name;
    }
  return any;
}

/// A replica that owns the leases: its counters have no grant (the lease
/// table takes workers' slots from them under the limit).
void own_counters(self_ptr self) {
  if (auto active = active_of(self))
    for (const auto& [name, c] : active->clusters)
      if (c->capacity) {
        c->capacity_looked();
        if (c->running_counter()->granted() != slot_counter::unbounded) {
          c->running_counter()->set_grant(slot_counter::unbounded);
          c->notify_groups(true);
        }
      }
}

/// Compares each cluster's grant with what its queries need: gives back
/// what is idle (first, so that other workers get it), asks for what is
/// missing.
void look(self_ptr self) {
  auto& st = self->state;
  if (st.owns)
    return own_counters(self);
  if (st.url.empty()) // a replica with no owner to ask: it keeps its grants
    return;
  if (st.in_flight) {
    st.dirty = true;
    return;
  }
  st.dirty = false;
  if (st.draining && st.drain_waiters.empty())
    return; // given back and heard: nothing more goes out
  if (st.resync || st.draining)
    return send_renew(self);
  auto active = active_of(self);
  auto release = new_call(self);
  auto acquire = new_call(self);
  acquire.wait_ms = acquire_wait_ms;
  bool lingering = false;
  if (active) {
    for (const auto& [name, c] : active->clusters) {
      if (!c->capacity)
        continue;
      c->capacity_looked(); // later changes signal again
      auto& h = holding_for(self, name, *c);
      auto running = c->running();
      auto queued = c->queued();
      auto want = std::min<uint64_t>(c->limit, uint64_t{running} + queued);
      auto granted = h.counter->granted();
      if (granted == slot_counter::unbounded)
        continue;
      // Contended and over its share: a freed slot goes back rather than
      // to this worker's next waiter, who asks like everyone else.
      auto keep = want;
      if (auto share = st.contended.find(name); share != st.contended.end()) {
        keep = std::min<uint64_t>(want, share->second);
        h.counter->set_cap(share->second); // queries ending give back at once
      } else if (h.counter->set_cap(slot_counter::unbounded); want < granted) {
        // Idle slots, nobody waiting for them elsewhere: kept a moment.
        auto now = self->clock().now();
        if (h.idle_since == caf::actor_clock::time_point{})
          h.idle_since = now;
        if (now - h.idle_since < linger) {
          keep = granted;
          lingering = true;
        }
      }
      if (want >= granted || keep < granted)
        h.idle_since = {};
      if (keep < granted)
        h.counter->shrink_grant(static_cast<uint32_t>(keep));
      // What the control plane counts beyond the grant: shrunk here, or by
      // queries that ended under a cap.
      granted = h.counter->granted();
      if (h.held > granted)
        release.items.push_back({name, "", h.held - granted});
      if (want > granted) {
        auto missing = static_cast<uint32_t>(want - granted);
        if (auto group = group_of(*active, *c); !group.empty())
          acquire.items.push_back({name, std::move(group), missing});
      }
    }
  }
  // Clusters gone from the config: all of it back.
  for (auto& [name, h] : st.clusters)
    if (h.held > 0 && (!active || !active->clusters.contains(name))) {
      bool listed = false;
      for (const auto& r : release.items)
        listed = listed || r.cluster == name;
      if (!listed)
        release.items.push_back({name, "", h.held});
    }
  if (lingering) // the idle slots go back when the moment is over
    self->delayed_send(self, linger, atom::want::value);
  if (!release.items.empty()) {
    st.dirty = !acquire.items.empty();
    return send(self, lease_verb::release, std::move(release));
  }
  if (!acquire.items.empty())
    send(self, lease_verb::acquire, std::move(acquire));
}

void schedule_look(self_ptr self, caf::timespan after = caf::timespan{0}) {
  auto& st = self->state;
  if (st.tick_scheduled)
    return;
  st.tick_scheduled = true;
  if (after.count() == 0)
    self->send(self, atom::tick::value, false);
  else
    self->delayed_send(self, after, atom::tick::value, false);
}

caf::timespan backoff(capacity_state& st) {
  auto ceiling = std::min<caf::timespan>(max_backoff, 100ms * (1u << std::min(st.failures, 5u)));
  std::uniform_int_distribution<int64_t> pick{ceiling.count() / 2, ceiling.count()};
  return caf::timespan{pick(st.rng)};
}

/// Grants and slots take effect: queries waiting on the worker retry.
void wake(self_ptr self, const std::string& cluster) {
  if (auto active = active_of(self))
    if (auto c = active->clusters.find(cluster); c != active->clusters.end())
      c->second->notify_groups(true);
}

void set_contended(capacity_state& st,
                   const std::vector<worker_api::acquire_answer::share>& shares) {
  st.contended.clear();
  for (const auto& s : shares)
    st.contended[s.cluster] = s.slots;
}

void applied(self_ptr self, const capacity_state::call& done, const std::string& body) {
  auto& st = self->state;
  if (done.verb != lease_verb::acquire)
    if (auto contended = worker_api::decode_contended(body))
      set_contended(st, *contended);
  switch (done.verb) {
    case lease_verb::acquire: {
      auto answer = worker_api::decode_acquire_answer(body);
      if (!answer) {
        spdlog::error("the control plane's answer to an acquire is not one: {}",
                      body.substr(0, 200));
        st.resync = true; // a renew sets the numbers straight
        return;
      }
      for (const auto& g : answer->granted) {
        auto& h = st.clusters[g.cluster];
        h.held += g.count;
        if (h.counter)
          h.counter->raise_grant(g.count);
        wake(self, g.cluster);
      }
      for (const auto& d : answer->denied)
        st.cfg->stats->lease_denied(d.group);
      set_contended(st, answer->contended);
      break;
    }
    case lease_verb::release:
      for (const auto& r : done.body.items)
        if (auto h = st.clusters.find(r.cluster); h != st.clusters.end())
          h->second.held -= std::min(h->second.held, r.count);
      break;
    case lease_verb::renew: {
      bool short_of = false;
      for (const auto& r : done.body.items) {
        auto& h = st.clusters[r.cluster];
        h.held = r.count;
        if (!h.counter)
          continue;
        // The grant is what the control plane now counts, or more while
        // more run (queries admitted on own limits during an outage):
        // those are told with the next renew, and nobody new is admitted
        // meanwhile.
        auto running = h.counter->set_grant(r.count);
        if (running > r.count) {
          h.counter->grant_running();
          short_of = true;
        }
        wake(self, r.cluster);
      }
      if (st.link != capacity_state::link_state::connected)
        spdlog::info("capacity: the control plane answers again; leases resynchronized");
      st.link = capacity_state::link_state::connected;
      st.resync = short_of;
      if (st.draining && !short_of) {
        for (auto& p : st.drain_waiters)
          p.deliver(atom::ok::value);
        st.drain_waiters.clear();
      }
      break;
    }
  }
}

/// Every cluster's grant, those of the config and those still held: what
/// an outage leaves the worker (unbounded or none); waiters look again.
void set_every_grant(self_ptr self, uint32_t grant) {
  if (auto active = active_of(self))
    for (const auto& [name, c] : active->clusters)
      if (c->capacity)
        holding_for(self, name, *c);
  for (auto& [name, h] : self->state.clusters)
    if (h.counter)
      h.counter->set_grant(grant);
  if (auto active = active_of(self))
    for (const auto& [name, c] : active->clusters)
      if (c->capacity)
        c->notify_groups(true);
}

/// No usable answer: the call is repeated (or, once the worker lost its
/// leases' footing, replaced by a renew) after a backoff.
void failed(self_ptr self, const std::string& why) {
  auto& st = self->state;
  ++st.failures;
  ++st.failures_total;
  st.last_error = why;
  auto verb = st.in_flight->verb;
  st.cfg->stats->coordination_failed(std::string{to_string(verb)});
  auto local_limits = st.cfg->coordination.on_unavailable
                      == config::unavailable_policy::local_limits;
  auto silent = self->clock().now() - st.last_answer;
  using ls = capacity_state::link_state;
  if (local_limits && st.link == ls::connected) {
    spdlog::warn("capacity: {}; onUnavailable: localLimits, admitting on this worker's own "
                 "limits until the control plane answers",
                 why);
    st.link = ls::degraded;
    set_every_grant(self, slot_counter::unbounded);
    st.resync = true;
  } else if (!local_limits && st.link == ls::connected && silent > 2 * interval(st)) {
    spdlog::warn("capacity: {}; the leases have expired on the control plane by now: no new "
                 "query until it answers (onUnavailable: failClosed)",
                 why);
    st.link = ls::closed;
    set_every_grant(self, 0);
    st.resync = true;
  } else {
    spdlog::warn("capacity: {} (attempt {})", why, st.failures);
  }
  auto again = *st.in_flight;
  st.in_flight.reset();
  if (st.resync) // a renew, built when it goes
    return schedule_look(self, backoff(st));
  self->delayed_send(self, backoff(st), atom::renew::value);
  st.in_flight = again; // sent again when the backoff is over
}

void on_answer(self_ptr self, uint64_t seq, http_outcome& o) {
  auto& st = self->state;
  if (!st.in_flight || seq != st.in_flight->body.seq)
    return;
  if (o.status == 200) {
    auto done = std::move(*st.in_flight);
    st.in_flight.reset();
    st.failures = 0;
    st.last_error.clear();
    st.last_answer = done.sent;
    applied(self, done, o.body);
    // Demand that arrived meanwhile (or before a resync) is looked at now;
    // with nothing to ask, nothing goes out.
    schedule_look(self);
    return;
  }
  if (o.status == 409 && o.body.find("unknownSession") != std::string::npos) {
    st.in_flight.reset();
    st.resync = true;
    return schedule_look(self);
  }
  if (o.status >= 400 && o.status < 500 && o.status != 429) {
    // The control plane refuses the call itself (a config the worker does
    // not have yet, a bug): a renew sets the numbers straight.
    spdlog::error("capacity: the control plane refused a {}: {}",
                  to_string(st.in_flight->verb), o.describe());
    st.last_error = o.describe();
    st.in_flight.reset();
    st.resync = true;
    ++st.failures;
    return schedule_look(self, backoff(st));
  }
  failed(self, o.describe());
}

std::string_view state_name(capacity_state::link_state s) {
  switch (s) {
    case capacity_state::link_state::connected:
      return "connected";
    case capacity_state::link_state::degraded:
      return "degraded";
    case capacity_state::link_state::closed:
      return "closed";
  }
  return "connected";
}

} // namespace

capacity_actor::behavior_type capacity(capacity_actor::stateful_pointer<capacity_state> self,
                                       std::shared_ptr<const capacity_settings> cfg) {
  self->state.cfg = std::move(cfg);
  self->state.url = self->state.cfg->control_plane.url;
  self->state.last_answer = self->clock().now();
  self->state.cfg->stats->expose_coordination();
  self->delayed_send(self, probe_every, atom::tick::value, true);
  return {
    [self](atom::want) { schedule_look(self); },
    [self](atom::tick, bool renewal) {
      auto& st = self->state;
      if (!renewal) {
        st.tick_scheduled = false;
        return look(self);
      }
      self->delayed_send(self, probe_every, atom::tick::value, true);
      if (st.owns || st.url.empty() || st.in_flight || (st.draining && st.drain_waiters.empty()))
        return;
      if (st.resync || st.dirty)
        return look(self);
      auto quiet = self->clock().now() - st.last_sent;
      bool holding = false;
      for (const auto& [name, h] : st.clusters)
        holding = holding || h.held > 0;
      // A renewal every interval; a worker holding slots hears more often
      // whether others wait for them.
      if (quiet >= interval(st) || (holding && quiet >= probe_every))
        send_renew(self);
    },
    [self](atom::leased, uint64_t seq, http_outcome& o) { on_answer(self, seq, o); },
    [self](atom::renew) {
      auto& st = self->state;
      if (!st.in_flight)
        return;
      auto again = std::move(*st.in_flight);
      st.in_flight.reset();
      send(self, again.verb, std::move(again.body));
    },
    [self](atom::get) {
      const auto& st = self->state;
      capacity_status s;
      s.mode = "controlPlane";
      s.on_unavailable = st.cfg->coordination.on_unavailable
                             == config::unavailable_policy::local_limits
                           ? "localLimits"
                           : "failClosed";
      s.state = std::string{state_name(st.link)};
      for (const auto& [name, h] : st.clusters)
        s.held[name] = h.held;
      s.calls = st.calls_total;
      s.failures = st.failures_total;
      s.last_error = st.last_error;
      return s;
    },
    [self](atom::leader) {
      auto& st = self->state;
      spdlog::info("capacity: this replica owns the fleet's leases; its queries admit on its own "
                   "counters");
      st.owns = true;
      st.in_flight.reset(); // an answer to it is ignored
      st.clusters.clear();
      st.contended.clear();
      st.resync = false;
      st.link = capacity_state::link_state::connected;
      own_counters(self);
    },
    [self](atom::follow, std::string& url) {
      auto& st = self->state;
      if (st.owns) {
        // Keep what runs, admit nothing more until the new owner counted it.
        if (auto active = active_of(self))
          for (const auto& [name, c] : active->clusters)
            if (c->capacity)
              holding_for(self, name, *c).counter->grant_running();
        st.owns = false;
      }
      st.url = std::move(url);
      st.in_flight.reset();
      st.resync = true;
      schedule_look(self);
    },
    [self](atom::drain) -> caf::result<atom::ok> {
      auto& st = self->state;
      if (st.owns)
        return atom::ok::value;
      st.draining = true;
      auto p = self->make_response_promise<atom::ok>();
      st.drain_waiters.push_back(p);
      if (!st.in_flight)
        look(self);
      else
        st.dirty = true;
      return p;
    },
  };
}

} // namespace qf
