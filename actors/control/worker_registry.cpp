#include "actors/control/worker_registry.hpp"

#include <caf/all.hpp>
#include <set>
#include <spdlog/spdlog.h>

namespace qf {

namespace {

using namespace std::chrono_literals;
using self_ptr = worker_registry_actor::stateful_pointer<worker_registry_state>;

constexpr auto batch_every = 1s;

/// Missed heartbeats before a worker counts as gone.
constexpr int64_t missed_beats = 3;

/// Two or more live workers with coordination.mode: local share the
/// snapshot's clusters, each under the whole limit: warned once per change,
/// and shown on each of them.
void check_local_mode(self_ptr self) {
  auto& st = self->state;
  std::set<std::string> local;
  for (const auto& [name, e] : st.workers)
    if (e.status != "gone" && e.report.coordination_mode == "local")
      local.insert(name);
  std::string warning;
  if (local.size() >= 2) {
    warning = std::to_string(local.size())
              + " workers use coordination.mode: local and share clusters: each applies "
                "maxRunningQueries alone, so the effective limit is multiplied by "
              + std::to_string(local.size());
    if (local != st.local_mode) {
      std::string names;
      for (const auto& n : local)
        names += (names.empty() ? "" : ", ") + n;
      spdlog::warn("{} ({})", warning, names);
    }
  }
  st.local_mode = local.size() >= 2 ? local : std::set<std::string>{};
  for (auto& [name, e] : st.workers)
    e.coordination_warning = local.contains(name) ? warning : std::string{};
}

void seen(self_ptr self, worker_api::worker_report&& r, bool enrolling) {
  auto& st = self->state;
  auto now = wall_ms();
  auto& e = st.workers[r.name];
  if (enrolling || e.registered_at_ms == 0 || e.report.incarnation != r.incarnation) {
    e.registered_at_ms = now;
    e.enrolled = true;
  }
  e.last_seen_at_ms = now;
  st.heard[r.name] = self->clock().now();
  e.status = r.status;
  st.dirty.insert(r.name);
  bool mode_changed = e.report.coordination_mode != r.coordination_mode;
  e.report = std::move(r);
  if (mode_changed || e.report.coordination_mode == "local")
    check_local_mode(self);
}

/// Without a database, this registry alone decides who is gone, and
/// forgets them after a day.
void mark_gone(self_ptr self) {
  auto& st = self->state;
  auto now = self->clock().now();
  for (auto i = st.workers.begin(); i != st.workers.end();) {
    auto& [name, e] = *i;
    auto silent = now - st.heard[name];
    if (e.status == "gone" && silent > 24h) {
      st.heard.erase(name);
      i = st.workers.erase(i);
      continue;
    }
    if (e.status != "gone" && e.report.heartbeat_interval_secs > 0
        && silent > missed_beats * std::chrono::seconds(e.report.heartbeat_interval_secs)) {
      e.status = "gone";
      spdlog::warn("worker {} missed {} heartbeats: gone", name, missed_beats);
    }
    ++i;
  }
  check_local_mode(self);
}

/// Rows as the database has them now, with what only this replica's
/// memory knows (downloaded revision, coordination mode...) kept, and
/// heartbeats that arrived meanwhile left alone.
void merge(self_ptr self, std::vector<worker_entry>& rows) {
  auto& st = self->state;
  // Pruned from the table (gone for a day): gone from here too, unless
  // heard from meanwhile.
  std::set<std::string> stored;
  for (const auto& row : rows)
    stored.insert(row.report.name);
  for (auto i = st.workers.begin(); i != st.workers.end();)
    if (!stored.count(i->first) && !st.dirty.count(i->first) && i->second.status == "gone") {
      st.heard.erase(i->first);
      i = st.workers.erase(i);
    } else {
      ++i;
    }
  for (auto& row : rows) {
    auto i = st.workers.find(row.report.name);
    if (i == st.workers.end()) {
      st.workers.emplace(row.report.name, std::move(row));
      continue;
    }
    auto& mine = i->second;
    if (st.dirty.count(row.report.name) || mine.last_seen_at_ms > row.last_seen_at_ms)
      continue;
    mine.status = row.status;
    mine.last_seen_at_ms = row.last_seen_at_ms;
    mine.registered_at_ms = row.registered_at_ms;
    mine.report.labels = std::move(row.report.labels);
    mine.report.version = std::move(row.report.version);
    mine.report.active_revision = std::move(row.report.active_revision);
    mine.report.last_error = std::move(row.report.last_error);
  }
  check_local_mode(self);
}

} // namespace

worker_registry_actor::behavior_type
worker_registry(worker_registry_actor::stateful_pointer<worker_registry_state> self,
                registry_store_actor store) {
  self->state.store = std::move(store);
  self->delayed_send(self, batch_every, atom::tick::value);
  return {
    [self](atom::enroll, worker_api::worker_report& r) {
      spdlog::info("worker {} registered (version {}, {})", r.name, r.version,
                   r.active_revision.empty() ? "no config yet" : r.active_revision);
      seen(self, std::move(r), true);
      return atom::ok::value;
    },
    [self](atom::heartbeat, worker_api::worker_report& r) {
      seen(self, std::move(r), false);
      return atom::ok::value;
    },
    [self](atom::get) {
      std::vector<worker_entry> out;
      out.reserve(self->state.workers.size());
      for (const auto& [name, e] : self->state.workers)
        out.push_back(e);
      return out;
    },
    [self](atom::get, const std::string& name) -> caf::result<worker_entry> {
      auto i = self->state.workers.find(name);
      if (i == self->state.workers.end())
        return make_error(errc::unknown_worker, "no worker named " + name);
      return i->second;
    },
    [self](atom::tick) {
      self->delayed_send(self, batch_every, atom::tick::value);
      auto& st = self->state;
      if (!st.store) {
        mark_gone(self);
        st.dirty.clear();
        return;
      }
      if (st.writing)
        return; // the last batch is still on its way: this one joins the next
      // Every known worker goes along (for its interval); the store
      // writes the changed ones.
      std::vector<worker_entry> batch;
      for (const auto& name : st.dirty) {
        auto& e = st.workers.at(name);
        batch.push_back(e);
        e.enrolled = false; // its registration goes with this batch
      }
      for (const auto& [name, e] : st.workers)
        if (!st.dirty.count(name)) {
          auto known = e;
          known.registered_at_ms = 0; // not to be written: only its interval counts
          batch.push_back(std::move(known));
        }
      st.dirty.clear();
      st.writing = true;
      auto sent = batch;
      self->request(st.store, 10s, atom::put::value, std::move(batch))
        .then(
          [self](std::vector<worker_entry>& rows) {
            self->state.writing = false;
            merge(self, rows);
          },
          [self, sent](caf::error& err) {
            auto& s = self->state;
            s.writing = false;
            spdlog::warn("cannot write the worker registry: {}", message_of(err));
            for (const auto& e : sent) // written with the next batch
              if (e.registered_at_ms != 0 && s.workers.count(e.report.name)) {
                s.dirty.insert(e.report.name);
                s.workers[e.report.name].enrolled |= e.enrolled;
              }
          });
    },
  };
}

} // namespace qf
