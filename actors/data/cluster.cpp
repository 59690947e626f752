// Health checks and connection pooling for one cluster.
#include "actors/data/cluster.hpp"

#include "actors/data/connection.hpp"
#include "actors/data/query_registry.hpp"
#include "actors/node/metrics.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

namespace qf {

namespace {

using self_ptr = caf::stateful_actor<cluster_actor_state>*;

void report_first_check(self_ptr self) {
  auto& st = self->state;
  if (!st.first_check_reported) {
    st.first_check_reported = true;
    st.first_round->pending.fetch_sub(1);
  }
}

void set_health(self_ptr self, health next) {
  auto& st = self->state;
  if (st.retired)
    return; // its successor (if any) owns the name's health now
  auto before = st.shared->status.exchange(next);
  if (before != next) {
    spdlog::info("cluster {}: {} -> {}", st.cfg.name, to_string(before),
                 to_string(next));
    st.stats->cluster_health(st.cfg.name, std::string{to_string(next)});
    if (next == health::healthy)
      st.shared->notify_groups(); // queued queries may run now
  }
  report_first_check(self);
}

void schedule_check(self_ptr self) {
  auto& st = self->state;
  // Up to 10% jitter keeps checks of many clusters from running in step.
  auto delay = st.monitor.task_delay;
  std::uniform_int_distribution<int64_t> jitter{0, delay.count() / 10};
  self->delayed_send(self, delay + std::chrono::milliseconds(jitter(st.rng)),
                     atom::check::value, st.generation);
}

void run_check(self_ptr self) {
  auto& state = self->state;
  const auto& probe = state.monitor.probe_of(state.cfg);
  if (state.checker && state.checker_probe != probe) {
    self->send_exit(state.checker, caf::exit_reason::user_shutdown);
    state.checker = nullptr;
  }
  if (!state.checker) {
    state.checker = self->spawn<caf::detached>(health_checker, state.cfg, probe);
    state.checker_probe = probe;
  }
  auto generation = state.generation;
  bool count = !state.counting || state.counting->load();
  self->request(state.checker, state.monitor.check_timeout, atom::check::value, count)
    .then(
      [self, generation](health_ok& ok) {
        if (generation != self->state.generation)
          return; // deactivated (or reactivated) meanwhile
        self->state.db = std::move(ok.db);
        if (ok.load) {
          auto& shared = *self->state.shared;
          shared.reported_load.store(ok.load->total());
          shared.counted_at_ms.store(steady_ms());
          // As engine reconciliation's published counts: three intervals
          // and a little more.
          auto& m = self->state.monitor;
          shared.set_engine_load(std::move(*ok.load), 3 * m.task_delay.count() + 5000);
        }
        set_health(self, health::healthy);
        schedule_check(self);
      },
      [self, generation](caf::error& err) {
        auto& st = self->state;
        if (generation != st.generation)
          return;
        spdlog::warn("cluster {}: health check failed: {}", st.cfg.name,
                     message_of(err));
        if (err == caf::sec::request_timeout) {
          // The checker is stuck in a blocking call; let it die off.
          self->send_exit(st.checker, caf::exit_reason::user_shutdown);
          st.checker = nullptr;
        }
        set_health(self, health::unhealthy);
        schedule_check(self);
      });
}

/// A retired cluster ends once nothing it lent is out; the grace period
/// covers a query admitted just before the change and acquiring now.
void quit_when_idle(self_ptr self) {
  auto& st = self->state;
  if (st.connections.empty()) {
    if (st.checker)
      self->send_exit(st.checker, caf::exit_reason::user_shutdown);
    self->quit();
    return;
  }
  self->delayed_send(self, std::chrono::milliseconds(200), atom::retire::value, false);
}

} // namespace

caf::behavior cluster_actor(self_ptr self, config::cluster cfg,
                            config::monitor monitor,
                            std::shared_ptr<cluster_state> shared,
                            std::shared_ptr<metrics> stats,
                            std::shared_ptr<first_health_round> first_round,
                            std::shared_ptr<const std::atomic<bool>> counting) {
  auto& state = self->state;
  state.cfg = std::move(cfg);
  state.monitor = monitor;
  state.shared = std::move(shared);
  state.stats = std::move(stats);
  state.first_round = std::move(first_round);
  state.counting = std::move(counting);
  state.active = state.cfg.enabled;
  state.stats->cluster_health(state.cfg.name,
                           std::string{to_string(state.shared->status.load())});
  if (state.cfg.enabled) {
    // Counted in the round by whoever spawned it (build_fleet), before the
    // config is published: a published config whose clusters have not
    // started yet is not ready.
    self->send(self, atom::check::value, state.generation);
  } else {
    state.first_check_reported = true; // never counted in the first round
  }
  self->set_exit_handler([self](caf::exit_msg& msg) {
    auto& st = self->state;
    for (auto& conn : st.connections)
      self->send_exit(conn, msg.reason);
    st.connections.clear();
    st.shared->retire_pool(); // ended above, with every connection
    if (st.checker)
      self->send_exit(st.checker, msg.reason);
    self->quit(msg.reason);
  });
  return {
    [self](atom::check, uint64_t generation) {
      auto& st = self->state;
      if (generation == st.generation && st.active)
        run_check(self);
    },
    [self](atom::activate, bool on) {
      auto& st = self->state;
      if (st.active == on)
        return;
      st.active = on;
      st.shared->enabled.store(on);
      ++st.generation;
      spdlog::info("cluster {}: {}", st.cfg.name, on ? "activated" : "deactivated");
      auto next = on ? health::pending : health::unknown;
      set_health(self, next);
      // The node may have moved the shared status already; the metric
      // follows here either way.
      st.stats->cluster_health(st.cfg.name, std::string{to_string(next)});
      if (on)
        self->send(self, atom::check::value, st.generation);
    },
    [self](atom::update, config::monitor& m) {
      self->state.monitor = std::move(m); // run_check() takes a new checker
    },
    [self](atom::recheck) {
      // Updated through an API: its health starts over (PENDING), as the
      // health cache's table has it, also when the node kept the cluster
      // (only its groups changed); a check runs now.
      auto& st = self->state;
      if (!st.active || st.retired)
        return;
      ++st.generation; // a check under way no longer counts
      set_health(self, health::pending);
      self->send(self, atom::check::value, st.generation);
    },
    [self](atom::retire, bool deleted) {
      auto& st = self->state;
      if (st.retired) {
        quit_when_idle(self);
        return;
      }
      report_first_check(self);
      st.retired = true;
      st.active = false;
      ++st.generation;
      st.shared->enabled.store(false);
      // Here, not in the node: this actor publishes the series, and no
      // longer does from now on.
      if (deleted)
        st.stats->forget_cluster(st.cfg.name);
      // Idle connections end now; lent ones when they come back (the pool
      // takes none any more).
      for (auto& idle : st.shared->retire_pool()) {
        std::erase(st.connections, idle.actor);
        self->send_exit(idle.actor, caf::exit_reason::user_shutdown);
      }
      self->delayed_send(self, std::chrono::seconds(1), atom::retire::value, deleted);
    },
    [self](atom::acquire) -> caf::result<conn_lease> {
      auto& st = self->state;
      if (!st.db)
        return make_error(errc::engine_unavailable,
                          "cluster \"" + st.cfg.name + "\" is not reachable");
      if (auto lease = st.shared->take_idle())
        return std::move(*lease);
      try {
        // Embedded engines connect in microseconds; no thread is held long.
        std::shared_ptr<engines::connection> conn = st.db->connect();
        auto actor = self->spawn<caf::detached>(connection_actor, conn);
        st.connections.push_back(actor);
        return conn_lease{actor, conn};
      } catch (const std::exception& e) {
        return make_error(errc::engine_unavailable, e.what());
      }
    },
    [self](atom::release, conn_lease& lease, bool reusable) {
      auto& st = self->state;
      if (reusable && st.shared->give_back(lease))
        return;
      std::erase(st.connections, lease.actor);
      self->send_exit(lease.actor, caf::exit_reason::user_shutdown);
    },
  };
}

} // namespace qf
