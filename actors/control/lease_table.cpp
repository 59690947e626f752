#include "actors/control/lease_table.hpp"

#include "actors/data/slot_counter.hpp"
#include "actors/node/node.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <set>
#include <spdlog/spdlog.h>

namespace qf {

namespace {

using namespace std::chrono_literals;
using self_ptr = lease_table_actor::stateful_pointer<lease_table_state>;
using session = lease_table_state::session;

std::shared_ptr<cluster_state> cluster_named(self_ptr self, const std::string& name) {
  auto active = self->state.cfg.cell->load();
  if (!active)
    return nullptr;
  auto i = active->clusters.find(name);
  return i == active->clusters.end() ? nullptr : i->second;
}

/// Slots went back: the control plane's own waiters may take them.
void gave_back(self_ptr self, const std::string& cluster) {
  if (auto c = cluster_named(self, cluster))
    c->notify_groups(true);
}

void free_all(self_ptr self, session& s) {
  for (auto& [cluster, h] : s.held)
    if (h.count > 0) {
      h.counter->give(h.count);
      gave_back(self, cluster);
    }
  s.held.clear();
}

void renewed(self_ptr self, session& s) {
  s.expires = self->clock().now() + std::chrono::seconds(s.ttl_secs);
}

/// The session a call may act on, or why not.
caf::expected<session*> session_for(self_ptr self, const worker_api::lease_call& c) {
  auto i = self->state.sessions.find(c.worker);
  if (i == self->state.sessions.end() || i->second.incarnation != c.incarnation)
    return make_error(errc::unknown_session,
                      "the control plane holds no leases of " + c.worker
                        + " (it restarted, or they expired): renew first");
  if (c.seq < i->second.last_seq)
    return make_error(errc::stale_lease_call, "seq " + std::to_string(c.seq)
                                                + " is older than the last call, "
                                                + std::to_string(i->second.last_seq));
  return &i->second;
}

/// Every item names a cluster of a group that has it as a member.
caf::error check_items(self_ptr self, const worker_api::lease_call& c, bool with_groups) {
  auto active = self->state.cfg.cell->load();
  if (!active)
    return make_error(errc::not_configured, "the control plane has no config yet");
  for (const auto& item : c.items) {
    if (!active->clusters.contains(item.cluster))
      return make_error(errc::bad_lease, "no cluster named " + item.cluster);
    if (!with_groups)
      continue;
    auto g = active->group_gates.find(item.group);
    if (g == active->group_gates.end())
      return make_error(errc::bad_lease, "no cluster group named " + item.group);
    if (!g->second->has_member(*active->clusters.at(item.cluster)))
      return make_error(errc::bad_lease, item.cluster + " is not a member of " + item.group);
  }
  return {};
}

/// How long a cluster counts as contended after it denied a worker.
constexpr auto contended_for = std::chrono::seconds(1);

bool recently(const std::map<std::string, caf::actor_clock::time_point>& denied,
              const std::string& cluster, caf::actor_clock::time_point now) {
  auto d = denied.find(cluster);
  return d != denied.end() && now - d->second < contended_for;
}

/// A cluster's fair share while others wait for it (a slot denied a
/// moment ago, or the control plane's own queries queued for it): the
/// limit over those holding or wanting slots there, the control plane's
/// own queries one of them; 0 while the fleet runs past the limit.
std::optional<uint32_t> share_of(self_ptr self, const std::string& cluster) {
  auto& st = self->state;
  auto now = self->clock().now();
  auto state = cluster_named(self, cluster);
  if (!state)
    return std::nullopt;
  // Over the limit (renewals after an outage with localLimits counted past
  // it): every slot freed goes back, not to its holder's next waiter,
  // until the fleet is under the limit again.
  if (state->running() > state->limit)
    return 0u;
  bool own_waiting = state->queued() > 0;
  if (!own_waiting && !recently(st.denied_at, cluster, now))
    return std::nullopt;
  uint32_t demanding = own_waiting ? 1 : 0;
  for (const auto& [name, other] : st.sessions) {
    auto h = other.held.find(cluster);
    if ((h != other.held.end() && h->second.count > 0) || recently(other.denied_at, cluster, now))
      ++demanding;
  }
  demanding = std::max(demanding, 1u);
  // Rounded down: the shares fit in the limit, so a party at its share
  // never leaves another without one.
  return std::max(1u, state->limit / demanding);
}

/// The clusters of the call and of the worker's session that others wait
/// for, each with its fair share.
std::vector<worker_api::acquire_answer::share>
contended(self_ptr self, const session* s, const worker_api::lease_call& c) {
  std::set<std::string> names;
  for (const auto& item : c.items)
    names.insert(item.cluster);
  if (s)
    for (const auto& [cluster, h] : s->held)
      names.insert(cluster);
  std::vector<worker_api::acquire_answer::share> out;
  for (const auto& cluster : names)
    if (auto share = share_of(self, cluster))
      out.push_back({cluster, *share});
  return out;
}

/// What a grant now may give the session of an item: all it asks for,
/// or, while others wait for the cluster, what is left of its fair share.
uint32_t grantable(self_ptr self, const session& s, const worker_api::lease_item& item) {
  auto share = share_of(self, item.cluster);
  if (!share)
    return item.count;
  auto h = s.held.find(item.cluster);
  auto held = h == s.held.end() ? 0u : h->second.count;
  return std::min(item.count, *share > held ? *share - held : 0u);
}

/// Grants what the clusters have room for now.
worker_api::acquire_answer grant(self_ptr self, session& s, const worker_api::lease_call& c) {
  auto& st = self->state;
  worker_api::acquire_answer a;
  a.lease_ttl_secs = s.ttl_secs;
  bool in_grace = self->clock().now() < st.grace_ends;
  for (const auto& item : c.items) {
    auto cluster = cluster_named(self, item.cluster);
    uint32_t got = 0;
    // While others wait, nobody gets past a fair share.
    auto wanted = grantable(self, s, item);
    if (cluster && !in_grace && wanted > 0)
      got = cluster->running_counter()->take_up_to(wanted, cluster->limit);
    if (got > 0) {
      auto& h = s.held[item.cluster];
      h.counter = cluster->running_counter();
      h.count += got;
      a.granted.push_back({item.cluster, "", got});
    }
    if (got == item.count) // it has what it asked for: it waits no more
      s.denied_at.erase(item.cluster);
    if (got < item.count) {
      a.denied.push_back({item.cluster, item.group, item.count - got,
                          cluster ? cluster->running() : 0, cluster ? cluster->limit : 0});
      st.cfg.stats->lease_denied(item.group);
      st.denied_at[item.cluster] = self->clock().now();
      s.denied_at[item.cluster] = self->clock().now();
    }
  }
  a.contended = contended(self, &s, c);
  return a;
}

/// A timer for the earliest end of a waiting call's wait, or of the grace
/// after a start or takeover. Everything else that makes room wakes the
/// table itself: a worker's release, renewal or expiry here, a
/// control-plane query's release through its cluster
/// (slot_counter::want_wake), a new config (snapshot_holder).
void schedule_deadline(self_ptr self) {
  auto& st = self->state;
  if (st.waiting.empty())
    return;
  auto earliest = st.waiting.front().until;
  for (const auto& w : st.waiting)
    earliest = std::min(earliest, w.until);
  if (self->clock().now() < st.grace_ends)
    earliest = std::min(earliest, st.grace_ends);
  if (st.timer_at && *st.timer_at <= earliest)
    return;
  st.timer_at = earliest;
  auto in = std::max<caf::timespan>(earliest - self->clock().now(), caf::timespan{0});
  self->delayed_send(self, in, atom::tick::value);
}

/// Whether a grant now could give the call anything: a free slot on a
/// cluster where the worker is under its fair share (a call its share
/// holds back waits for others to give slots back, or for its end, not
/// answered at once to be sent again). Full clusters are asked to tell the
/// table of their next freed slot, and looked at once more: a slot freed
/// between the two looks is not missed.
bool room_for(self_ptr self, const session& s, const worker_api::lease_call& call) {
  if (self->clock().now() < self->state.grace_ends)
    return false; // looked at again when the grace ends
  std::vector<std::shared_ptr<cluster_state>> full;
  for (const auto& item : call.items) {
    auto c = cluster_named(self, item.cluster);
    if (!c || grantable(self, s, item) == 0)
      continue;
    if (c->running() < c->limit)
      return true;
    full.push_back(std::move(c));
  }
  for (const auto& c : full)
    c->running_counter()->want_wake();
  return std::any_of(full.begin(), full.end(),
                     [](const auto& c) { return c->running() < c->limit; });
}

/// Waiting acquires, in arrival order: answered once something is granted
/// or their wait is over.
void retry_waiting(self_ptr self) {
  auto& st = self->state;
  auto now = self->clock().now();
  for (auto i = st.waiting.begin(); i != st.waiting.end();) {
    auto found = session_for(self, i->call);
    if (!found) {
      i->promise.deliver(found.error());
      i = st.waiting.erase(i);
      continue;
    }
    auto& s = **found;
    bool last_chance = now >= i->until;
    // What a grant now would give, without denying (and counting) yet.
    if (!last_chance && !room_for(self, s, i->call)) {
      ++i;
      continue;
    }
    auto answer = grant(self, s, i->call);
    s.last_answer = answer;
    renewed(self, s);
    i->promise.deliver(std::move(answer));
    i = st.waiting.erase(i);
  }
  schedule_deadline(self);
}

void end_grace(self_ptr self);

void sweep(self_ptr self) {
  auto& st = self->state;
  auto now = self->clock().now();
  for (auto i = st.sessions.begin(); i != st.sessions.end();) {
    if (i->second.expires > now) {
      ++i;
      continue;
    }
    uint32_t n = 0;
    for (const auto& [cluster, h] : i->second.held)
      n += h.count;
    if (n > 0)
      spdlog::warn("the leases of worker {} expired ({} slots back): it renewed none for {} s",
                   i->first, n, i->second.ttl_secs);
    free_all(self, i->second);
    bool last = st.awaited.erase(i->first) > 0 && st.awaited.empty();
    i = st.sessions.erase(i);
    if (last) // the last holder the record named is gone
      end_grace(self);
  }
  if (st.owner && !st.own_admitting && now >= st.grace_ends)
    end_grace(self);
  retry_waiting(self);
}

/// The grace is over: this replica's own queries admit on its counters
/// again (until then they keep what they run: a holding the record missed
/// is not theirs to take).
void end_grace(self_ptr self) {
  auto& st = self->state;
  st.grace_ends = std::min(st.grace_ends, self->clock().now());
  if (st.owner && !st.own_admitting && st.cfg.replica_client) {
    st.own_admitting = true;
    self->send(st.cfg.replica_client, atom::leader::value);
  }
}

/// A holder of the record renewed: once all have, the grace is over.
void heard_from(self_ptr self, const std::string& worker) {
  auto& st = self->state;
  if (st.awaited.erase(worker) > 0 && st.awaited.empty()) {
    spdlog::info("lease table: every holder in the record renewed; granting again");
    end_grace(self);
  }
}

/// This replica owns the leases now: every holding in the record is
/// counted (a session that only a renew can take on) until its holder
/// renews or its TTL ends.
void take_over(self_ptr self, const lease_takeover& t) {
  auto& st = self->state;
  auto now = self->clock().now();
  st.owner = true;
  st.awaited.clear();
  st.last_written.clear();
  uint32_t slots = 0;
  for (const auto& row : t.rows) {
    // Its own queries are on its own counters already.
    if (row.holder == st.cfg.replica || row.expires_in_ms <= 0)
      continue;
    auto cluster = cluster_named(self, row.cluster);
    if (!cluster)
      continue;
    auto& s = st.sessions[row.holder];
    s.ttl_secs = row.ttl_secs;
    s.expires = std::max(s.expires, now + std::chrono::milliseconds(row.expires_in_ms));
    auto& h = s.held[row.cluster];
    h.counter = cluster->running_counter();
    h.counter->force_take(row.count);
    h.count += row.count;
    slots += row.count;
    // The last owner's own queries ended with it, or it renews as a
    // follower: nobody waits for it.
    if (row.holder != t.previous_owner)
      st.awaited.insert(row.holder);
  }
  st.grace_ends = now + st.cfg.grace;
  st.own_admitting = false;
  spdlog::info("lease table: owner now, {} slots of {} holders from the record{}", slots,
               st.sessions.size(),
               st.awaited.empty() ? "" : "; granting once they renewed (or the grace ends)");
  if (st.awaited.empty())
    end_grace(self);
  if (st.cfg.forwarder)
    self->send(st.cfg.forwarder, atom::follow::value, std::string{});
  self->send(self, atom::flush::value);
}

/// Another replica owns the leases (or, "", none is known): calls go
/// there, and what this table counted is given back to the counters.
void follow(self_ptr self, const std::string& url) {
  auto& st = self->state;
  if (st.owner) {
    spdlog::warn("lease table: another replica owns the leases now ({})",
                 url.empty() ? "not known yet" : url);
    for (auto& [name, s] : st.sessions)
      free_all(self, s);
    st.sessions.clear();
    st.awaited.clear();
    for (auto& w : st.waiting)
      w.promise.deliver(make_error(errc::lease_owner_unavailable,
                                   "this control-plane replica no longer owns the leases"));
    st.waiting.clear();
  }
  st.owner = false;
  self->send(st.cfg.forwarder, atom::follow::value, url);
  if (st.cfg.replica_client)
    self->send(st.cfg.replica_client, atom::follow::value, url);
}

} // namespace

lease_table_actor::behavior_type
lease_table(lease_table_actor::stateful_pointer<lease_table_state> self, lease_table_settings cfg) {
  self->state.cfg = std::move(cfg);
  self->state.owner = !self->state.cfg.replicated;
  self->state.grace_ends = self->clock().now() + self->state.cfg.grace;
  self->delayed_send(self, self->state.cfg.sweep_every, atom::sweep::value);
  return {
    [self](atom::acquire, worker_api::lease_call& c)
      -> caf::result<worker_api::acquire_answer> {
      if (!self->state.owner)
        return self->delegate(self->state.cfg.forwarder, atom::acquire::value, std::move(c));
      auto found = session_for(self, c);
      if (!found)
        return found.error();
      auto& s = **found;
      if (c.seq == s.last_seq) { // a repeat: its first answer again
        if (s.last_answer)
          return *s.last_answer;
        return make_error(errc::stale_lease_call,
                          "seq " + std::to_string(c.seq) + " was not an acquire");
      }
      if (auto err = check_items(self, c, true))
        return err;
      s.last_seq = c.seq;
      s.last_answer.reset();
      renewed(self, s);
      auto answer = grant(self, s, c);
      if (!answer.granted.empty() || c.wait_ms == 0 || c.items.empty()) {
        s.last_answer = answer;
        return answer;
      }
      // Nothing free: the call waits (in order) for a slot to free up.
      auto promise = self->make_response_promise<worker_api::acquire_answer>();
      auto until = self->clock().now() + std::chrono::milliseconds(c.wait_ms);
      // (A slot freed since the grant above would be missed, were it not
      // looked at once more after asking to hear of the next one.)
      self->state.waiting.push_back({std::move(c), promise, until});
      retry_waiting(self);
      return promise;
    },
    [self](atom::release, worker_api::lease_call& c)
      -> caf::result<worker_api::acquire_answer> {
      if (!self->state.owner)
        return self->delegate(self->state.cfg.forwarder, atom::release::value, std::move(c));
      auto found = session_for(self, c);
      if (!found)
        return found.error();
      auto& s = **found;
      renewed(self, s);
      worker_api::acquire_answer news;
      news.lease_ttl_secs = s.ttl_secs;
      if (c.seq == s.last_seq) {
        news.contended = contended(self, &s, c);
        return news;
      }
      for (const auto& item : c.items) {
        auto h = s.held.find(item.cluster);
        auto held = h == s.held.end() ? 0u : h->second.count;
        if (item.count > held)
          return make_error(errc::lease_not_held, c.worker + " holds " + std::to_string(held)
                                               + " slots on " + item.cluster + ", not "
                                               + std::to_string(item.count));
      }
      s.last_seq = c.seq;
      s.last_answer.reset();
      for (const auto& item : c.items) {
        auto& h = s.held.at(item.cluster);
        h.counter->give(item.count);
        h.count -= item.count;
        if (h.count == 0)
          s.held.erase(item.cluster);
        gave_back(self, item.cluster);
      }
      retry_waiting(self);
      news.contended = contended(self, &s, c);
      return news;
    },
    [self](atom::renew, worker_api::lease_call& c) -> caf::result<worker_api::acquire_answer> {
      auto& st = self->state;
      if (!st.owner)
        return self->delegate(st.cfg.forwarder, atom::renew::value, std::move(c));
      heard_from(self, c.worker);
      auto i = st.sessions.find(c.worker);
      if (i != st.sessions.end() && i->second.incarnation == c.incarnation
          && c.seq < i->second.last_seq)
        return make_error(errc::stale_lease_call, "seq " + std::to_string(c.seq)
                                                    + " is older than the last call");
      if (i != st.sessions.end() && i->second.incarnation != c.incarnation) {
        // The worker restarted: what its last process held is free.
        free_all(self, i->second);
        st.sessions.erase(i);
        i = st.sessions.end();
      }
      bool adopting = i == st.sessions.end();
      auto& s = st.sessions[c.worker];
      s.incarnation = c.incarnation;
      s.last_seq = c.seq;
      s.last_answer.reset();
      s.ttl_secs = st.cfg.ttl_intervals * c.heartbeat_interval_secs;
      renewed(self, s);
      // Absolute: what the worker holds is what it says (normally what
      // the table has already).
      std::map<std::string, uint32_t> said;
      for (const auto& item : c.items)
        said[item.cluster] = item.count;
      for (auto h = s.held.begin(); h != s.held.end();) {
        auto want = said.contains(h->first) ? said[h->first] : 0;
        if (h->second.count > want) {
          h->second.counter->give(h->second.count - want);
          gave_back(self, h->first);
          h->second.count = want;
        }
        h = h->second.count == 0 ? s.held.erase(h) : std::next(h);
      }
      uint32_t adopted = 0;
      for (const auto& [cluster, want] : said) {
        auto c_state = cluster_named(self, cluster);
        auto& h = s.held[cluster];
        if (!c_state || want <= h.count) {
          if (h.count == 0)
            s.held.erase(cluster);
          continue;
        }
        if (!h.counter)
          h.counter = c_state->running_counter();
        h.counter->force_take(want - h.count);
        adopted += want - h.count;
        h.count = want;
      }
      if (adopted > 0)
        spdlog::info("worker {} holds {} slots the control plane did not count{}: counted now",
                     c.worker, adopted, adopting ? " (a new session)" : "");
      retry_waiting(self);
      worker_api::acquire_answer news;
      news.lease_ttl_secs = s.ttl_secs;
      news.contended = contended(self, &s, c);
      return news;
    },
    [self](atom::sweep_lock, worker_api::sweep_verb verb, worker_api::sweep_call& c) {
      return serve_sweep_lock(self, verb, c);
    },
    [self](atom::get) -> caf::result<std::vector<lease_holder_view>> {
      if (!self->state.owner)
        return holders_of_record(self);
      std::vector<lease_holder_view> out;
      auto now = self->clock().now();
      for (const auto& [name, s] : self->state.sessions) {
        lease_holder_view v{name, s.incarnation, {}, 0};
        for (const auto& [cluster, h] : s.held)
          v.held[cluster] = h.count;
        v.expires_in_ms
          = std::chrono::duration_cast<std::chrono::milliseconds>(s.expires - now).count();
        out.push_back(std::move(v));
      }
      return out;
    },
    [self](atom::sweep) {
      sweep(self);
      self->delayed_send(self, self->state.cfg.sweep_every, atom::sweep::value);
    },
    // A timer, a freed slot or a new config: the waiting calls look again.
    [self](atom::tick) {
      auto& st = self->state;
      if (st.timer_at && *st.timer_at <= self->clock().now())
        st.timer_at.reset();
      retry_waiting(self);
    },
    [self](atom::leader, lease_takeover& t) {
      self->state.record = caf::actor_cast<lease_owner_actor>(self->current_sender());
      take_over(self, t);
    },
    [self](atom::follow, std::string& url) {
      self->state.record = caf::actor_cast<lease_owner_actor>(self->current_sender());
      follow(self, url);
    },
    [self](atom::flush) {
      if (!self->state.owner)
        return;
      write_record(self);
      self->delayed_send(self, self->state.cfg.flush_every, atom::flush::value);
    },
  };
}

} // namespace qf
