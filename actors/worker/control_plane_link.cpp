#include "actors/worker/control_plane_link.hpp"

#include "actors/node/metrics.hpp"
#include "protocols/common/host_port.hpp"
#include "protocols/worker_api/compile.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

namespace qf {

namespace {

using namespace std::chrono_literals;
using self_ptr = control_plane_link_actor::stateful_pointer<control_plane_link_state>;

constexpr auto max_backoff = 60s;
/// How long a plain request (register, heartbeat, plain GET, a peer's
/// copy) may take.
constexpr auto request_timeout = 10s;
/// How long the holder may take to build a snapshot's fleet.
constexpr auto activation_timeout = 10s;

/// A weak handle for callbacks on IO threads: a transport outliving the
/// node must not keep its actor alive, nor reach a dead one.
caf::weak_actor_ptr handle_of(self_ptr self) {
  return caf::actor_cast<caf::weak_actor_ptr>(self->ctrl());
}

template <class... Ts>
void post(const caf::weak_actor_ptr& link, Ts&&... xs) {
  if (auto strong = caf::actor_cast<caf::strong_actor_ptr>(link))
    caf::anon_send(caf::actor_cast<control_plane_link_actor>(strong), std::forward<Ts>(xs)...);
}

http_fields auth_headers(const control_plane_link_state& st) {
  return {{"Authorization", "Bearer " + st.cfg->control_plane.shared_secret},
          {"X-QueryFlux-Worker", st.cfg->worker_name}};
}

worker_api::worker_report report(const control_plane_link_state& st, bool draining) {
  const auto& cfg = *st.cfg;
  worker_api::worker_report r;
  r.name = cfg.worker_name;
  r.labels = cfg.labels;
  r.version = cfg.version;
  r.incarnation = cfg.incarnation;
  r.downloaded_revision = st.downloaded;
  r.active_revision = st.active;
  r.last_error = st.last_error.substr(0, 8 * 1024);
  r.coordination_mode = std::string{config::to_string(cfg.coordination.mode)};
  r.config_source = st.source == config_source::none ? "" : std::string{to_string(st.source)};
  r.status = draining ? "draining" : "active";
  r.heartbeat_interval_secs = static_cast<uint32_t>(cfg.control_plane.heartbeat_interval.count());
  return r;
}

/// Polls now if the bucket has a token, else when it will. An answer
/// that brought a revision not seen lately takes no token: following a
/// control plane that changes is the point. Answers that brought nothing
/// new (a 304, the same revision, a rejected snapshot), or a revision the
/// worker ran a moment ago (replicas that disagree, flapping), are held
/// to the rate.
void schedule_poll(self_ptr self, bool brought_news = false) {
  auto& st = self->state;
  if (brought_news)
    return self->send(self, atom::poll::value);
  auto now = self->clock().now();
  if (st.refilled != caf::actor_clock::time_point{}) {
    std::chrono::duration<double> elapsed = now - st.refilled;
    st.tokens = std::min(2.0, st.tokens + elapsed.count());
  }
  st.refilled = now;
  // The token is taken now, also by a poll that waits for it to refill.
  st.tokens -= 1;
  if (st.tokens >= 0)
    return self->send(self, atom::poll::value);
  auto wait = std::chrono::duration<double>(-st.tokens);
  self->delayed_send(self, std::chrono::duration_cast<caf::timespan>(wait), atom::poll::value);
}

void reject(self_ptr self, std::string why) {
  auto& st = self->state;
  spdlog::error("rejected a configuration snapshot, revision {} stays active: {}",
                st.active.empty() ? "(none)" : st.active, why);
  st.last_error = std::move(why);
  st.cfg->stats->config_reload_failed("worker_activate");
  self->send(self, atom::heartbeat::value, false); // the control plane hears of it now
}

/// Compiles a verified snapshot and has the holder swap it in; `done`
/// hears whether it is active. False when it did not compile (rejected).
template <class Done>
bool activate(self_ptr self, worker_api::received_snapshot snapshot, config_source source,
              int64_t confirmed_at_ms, Done done) {
  auto& st = self->state;
  auto compiled = worker_api::compile(st.cfg->worker_yaml, snapshot.content);
  if (!compiled.config) {
    reject(self, std::move(compiled.error));
    done(false);
    return false;
  }
  auto revision = snapshot.encoded.revision;
  fleet_update next{std::make_shared<const config::gateway_config>(std::move(*compiled.config)),
                    std::move(snapshot.content.fleet)};
  snapshot_origin origin{
    std::make_shared<const worker_api::encoded_snapshot>(std::move(snapshot.encoded)), source,
    confirmed_at_ms};
  self->request(st.cfg->holder, activation_timeout, atom::activate::value, std::move(next),
                std::move(origin))
    .then(
      [self, revision, source, done](bool ok) {
        auto& s = self->state;
        if (!ok) {
          if (s.pending == revision)
            s.pending.clear();
          reject(self, "the snapshot's clusters and groups cannot be built (see the log)");
          return done(false);
        }
        spdlog::info("configuration revision {} from {} is active", revision, to_string(source));
        if (!s.active.empty() && s.active != revision) {
          s.recently_left.push_back(s.active);
          if (s.recently_left.size() > 4)
            s.recently_left.pop_front();
        }
        s.active = revision;
        s.source = source;
        if (s.pending == revision)
          s.pending.clear();
        s.last_error.clear();
        done(true);
      },
      [self, revision, done](caf::error& err) {
        if (self->state.pending == revision)
          self->state.pending.clear();
        reject(self, "the snapshot holder did not answer: " + message_of(err));
        done(false);
      });
  // The holder takes activations in order: this one ends up active.
  st.pending = revision;
  return true;
}

/// True when the body held a new revision that is being activated.
bool on_snapshot(self_ptr self, const std::string& body) {
  auto& st = self->state;
  auto decoded = worker_api::decode(body);
  if (!decoded.claimed_revision.empty())
    st.downloaded = decoded.claimed_revision;
  if (!decoded.snapshot) {
    reject(self, std::move(decoded.error));
    return false;
  }
  auto revision = decoded.snapshot->encoded.revision;
  // What the worker will run once the activations under way are done.
  const auto& upcoming = st.pending.empty() ? st.active : st.pending;
  if (revision == upcoming) {
    if (revision == st.active) { // the one running (copied from a peer, or a repeat)
      self->send(st.cfg->holder, atom::confirm::value, revision, wall_ms());
      st.source = config_source::control_plane;
      st.last_error.clear();
    }
    return false;
  }
  bool returning = std::find(st.recently_left.begin(), st.recently_left.end(), revision)
                   != st.recently_left.end();
  return activate(self, std::move(*decoded.snapshot), config_source::control_plane, wall_ms(),
                  [](bool) {})
         && !returning;
}

void on_poll_answer(self_ptr self, const http_outcome& o) {
  auto& st = self->state;
  st.polling = false;
  if (o.status == 200 || o.status == 304) {
    st.last_sync_ms = wall_ms();
    if (st.failures > 0)
      spdlog::info("the control plane answers again after {} failed attempts", st.failures);
    st.failures = 0;
    st.fresh_contact = false;
    bool news = false;
    if (o.status == 200) {
      news = on_snapshot(self, o.body);
    } else if (!st.downloaded.empty() && st.downloaded == st.active) {
      self->send(st.cfg->holder, atom::confirm::value, st.active, wall_ms());
      st.source = config_source::control_plane;
    }
    return schedule_poll(self, news);
  }
  ++st.failures;
  st.fresh_contact = true;
  st.last_error = "cannot sync with the control plane: " + o.describe();
  auto delay = backoff_delay(st.failures, st.rng);
  spdlog::warn("{} (attempt {}; the active config keeps serving; next try in {} ms)",
               st.last_error, st.failures,
               std::chrono::duration_cast<std::chrono::milliseconds>(delay).count());
  self->delayed_send(self, delay, atom::poll::value);
}

void poll(self_ptr self) {
  auto& st = self->state;
  if (st.polling)
    return;
  st.polling = true;
  auto generation = ++st.generation;
  const auto& cp = st.cfg->control_plane;
  http_call call;
  call.headers = auth_headers(st);
  if (st.fresh_contact || st.downloaded.empty()) {
    call.url = cp.url + "/worker/config";
    call.timeout = request_timeout;
  } else {
    auto hold = cp.poll_timeout;
    call.url = cp.url + "/worker/config/wait?since=" + st.downloaded
               + "&timeoutSecs=" + std::to_string(hold.count());
    // The server holds up to 17/16 of it (jitter); then the answer's trip.
    call.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(hold * 17 / 16 + 5s);
  }
  st.cfg->transport->send(std::move(call), [link = handle_of(self), generation](http_outcome o) {
    post(link, atom::polled::value, generation, std::move(o));
  });
}

/// Sends a heartbeat (the first one registers) unless one is on its way;
/// then one more goes when it is back.
void beat(self_ptr self) {
  auto& st = self->state;
  if (st.beating) {
    st.beat_again = true;
    return;
  }
  st.beating = true;
  st.beat_says_draining = st.draining;
  http_call call;
  call.method = "POST";
  call.url = st.cfg->control_plane.url + (st.registered ? "/worker/heartbeat" : "/worker/register");
  call.headers = auth_headers(st);
  call.headers.emplace_back("Content-Type", "application/json");
  call.body = worker_api::encode(report(st, st.draining));
  call.timeout = request_timeout;
  st.cfg->transport->send(std::move(call), [link = handle_of(self)](http_outcome o) {
    post(link, atom::beaten::value, std::move(o));
  });
}

void on_beat_answer(self_ptr self, const http_outcome& o) {
  auto& st = self->state;
  st.beating = false;
  if (o.status == 200) {
    if (!st.registered)
      spdlog::info("registered with the control plane {} as {}", st.cfg->control_plane.url,
                   st.cfg->worker_name);
    st.registered = true;
  } else {
    spdlog::warn("heartbeat to the control plane failed: {}", o.describe());
  }
  if (st.beat_says_draining) { // not a beat still saying active
    for (auto& p : st.drain_waiters)
      p.deliver(atom::ok::value);
    st.drain_waiters.clear();
  }
  if (st.beat_again) {
    st.beat_again = false;
    beat(self);
  }
  // One timer at a time, timed from the answer: a slow control plane is
  // not sent more.
  if (!st.beat_timer) {
    st.beat_timer = true;
    self->delayed_send(self, st.cfg->control_plane.heartbeat_interval, atom::heartbeat::value,
                       true);
  }
}

// Peer bootstrap: the copy of a running worker, when the control plane
// stays away past afterSecs and there is no config at all.

/// Whether the worker has, or is taking, a config of the control plane's:
/// then no peer's copy may come after it.
bool has_config(const control_plane_link_state& st) {
  return !st.active.empty() || !st.pending.empty() || !st.downloaded.empty();
}

void try_peer(self_ptr self, size_t index) {
  auto& st = self->state;
  if (has_config(st) || index >= st.peers.size()) {
    st.bootstrapping = false;
    if (!has_config(st)) { // every peer failed: look again later
      const auto& pb = *st.cfg->control_plane.peer_bootstrap;
      self->delayed_send(self, std::max<caf::timespan>(pb.after, 5s), atom::bootstrap::value);
    }
    return;
  }
  const auto& pb = *st.cfg->control_plane.peer_bootstrap;
  auto peers = split_host_port(pb.address, std::nullopt).value_or(host_port{});
  http_call call;
  call.url = std::string{st.cfg->peer_tls ? "https://" : "http://"}
             + join_host_port(peers.host, peers.port) + "/worker/peer-config";
  call.connect_address = st.peers[index];
  call.headers = auth_headers(st);
  call.timeout = request_timeout;
  st.cfg->transport->send(std::move(call), [link = handle_of(self), index](http_outcome o) {
    post(link, atom::copied::value, index, std::move(o));
  });
}

void on_peer_copy(self_ptr self, size_t index, const http_outcome& o) {
  auto& st = self->state;
  auto next = [self, index] { try_peer(self, index + 1); };
  if (has_config(st))
    return try_peer(self, st.peers.size()); // the control plane came first
  const auto& peer = st.peers[index];
  auto refuse = [&](std::string why) {
    spdlog::warn("peer bootstrap: {}", why);
    st.peer_error = std::move(why);
    next();
  };
  if (o.status != 200)
    return refuse("peer " + peer + " has no config to share: " + o.describe());
  auto decoded = worker_api::decode(o.body);
  if (!decoded.snapshot || !decoded.snapshot->confirmed_at_ms)
    return refuse("peer " + peer + " sent a config that does not verify: "
                  + (decoded.snapshot ? std::string{"no confirmedAt"} : decoded.error));
  auto confirmed = *decoded.snapshot->confirmed_at_ms;
  auto max_age = std::chrono::duration_cast<std::chrono::milliseconds>(
    st.cfg->control_plane.peer_bootstrap->max_age);
  if (confirmed > wall_ms() + 60'000) // a clock ahead would defeat the age limit fleet-wide
    return refuse("refused peer " + peer + "'s copy: confirmed in the future ("
                  + std::to_string((confirmed - wall_ms()) / 1000) + " s ahead of this clock)");
  if (wall_ms() - confirmed > max_age.count())
    return refuse("refused peer " + peer + "'s copy: the control plane last confirmed it "
                  + std::to_string((wall_ms() - confirmed) / 1000)
                  + " s ago, longer than maxAgeSecs");
  spdlog::warn("starting from peer {}'s copy of revision {} (confirmed {} s ago): stale until "
               "the control plane answers",
               peer, decoded.snapshot->encoded.revision, (wall_ms() - confirmed) / 1000);
  activate(self, std::move(*decoded.snapshot), config_source::peer, confirmed,
           [self, next](bool ok) {
             if (ok)
               self->state.bootstrapping = false;
             else
               next();
           });
}

} // namespace

caf::timespan backoff_delay(uint32_t failures, std::mt19937& rng) {
  auto ceiling = std::chrono::duration_cast<caf::timespan>(
    std::min<std::chrono::milliseconds>(max_backoff, 1s * (1ull << std::min(failures, 6u))));
  std::uniform_int_distribution<int64_t> pick{0, ceiling.count() - 1};
  return caf::timespan{pick(rng)};
}

control_plane_link_actor::behavior_type
control_plane_link(control_plane_link_actor::stateful_pointer<control_plane_link_state> self,
                   std::shared_ptr<const control_plane_link_settings> settings) {
  auto& st = self->state;
  st.cfg = std::move(settings);
  self->send(self, atom::heartbeat::value, false);
  self->send(self, atom::poll::value);
  if (const auto& pb = st.cfg->control_plane.peer_bootstrap)
    self->delayed_send(self, pb->after, atom::bootstrap::value);
  return {
    [self](atom::get) {
      const auto& s = self->state;
      return link_status{s.downloaded,     s.last_error,
                         s.last_sync_ms,   s.failures,
                         s.cfg->control_plane.url, s.peer_error};
    },
    [self](atom::drain) -> caf::result<atom::ok> {
      auto& s = self->state;
      s.draining = true;
      s.drain_waiters.push_back(self->make_response_promise<atom::ok>());
      if (s.beating)
        s.beat_again = true; // the one on its way still says active
      else
        beat(self);
      return s.drain_waiters.back();
    },
    [self](atom::poll) { poll(self); },
    [self](atom::polled, uint64_t generation, const http_outcome& o) {
      if (generation == self->state.generation)
        on_poll_answer(self, o);
    },
    [self](atom::heartbeat, bool timer) {
      if (timer)
        self->state.beat_timer = false;
      beat(self);
    },
    [self](atom::beaten, const http_outcome& o) { on_beat_answer(self, o); },
    [self](atom::bootstrap) {
      auto& s = self->state;
      if (has_config(s) || s.bootstrapping)
        return;
      s.bootstrapping = true;
      auto host = split_host_port(s.cfg->control_plane.peer_bootstrap->address, std::nullopt)
                    .value_or(host_port{})
                    .host;
      spdlog::info("no config after {} s: looking for a peer at {}",
                   s.cfg->control_plane.peer_bootstrap->after.count(), host);
      s.cfg->transport->resolve(host, [link = handle_of(self)](std::vector<std::string> ips) {
        post(link, atom::resolved::value, std::move(ips));
      });
    },
    [self](atom::resolved, std::vector<std::string>& ips) {
      self->state.peers = std::move(ips);
      if (self->state.peers.empty()) {
        self->state.peer_error = self->state.cfg->control_plane.peer_bootstrap->address
                                 + " resolves to no address";
        spdlog::warn("peer bootstrap: {}", self->state.peer_error);
      }
      try_peer(self, 0);
    },
    [self](atom::copied, size_t index, const http_outcome& o) {
      if (index < self->state.peers.size())
        on_peer_copy(self, index, o);
    },
  };
}

} // namespace qf
