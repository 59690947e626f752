// Slot accounting on a cluster.
#include "actors/data/cluster_state.hpp"

#include "actors/data/group_gate.hpp"
#include "actors/data/query_registry.hpp"

#include "actors/core/messages.hpp"
#include "engines/lane_pool.hpp"
#include "engines/mysql_async_connection.hpp"
#include "engines/pg_async_connection.hpp"
#include "engines/mysql_engine.hpp"

#include <caf/send.hpp>

#include <utility>

namespace qf {

std::string_view to_string(health h) {
  switch (h) {
    case health::pending:
      return "PENDING";
    case health::healthy:
      return "HEALTHY";
    case health::unhealthy:
      return "UNHEALTHY";
    case health::unknown:
      return "UNKNOWN";
  }
  return "UNKNOWN";
}

bool cluster_state::try_acquire() {
  switch (running_->try_take(limit)) {
    case slot_counter::outcome::taken:
      return true;
    case slot_counter::outcome::needs_grant:
      signal_capacity();
      return false;
    case slot_counter::outcome::full:
      return false;
  }
  return false;
}

void cluster_state::signal_capacity() {
  if (capacity && !signalled_.exchange(true))
    caf::anon_send(capacity, atom::want::value);
}

namespace {

/// Counts one pinned connection while it lives. It holds the counter, not
/// the cluster's state: a connection may outlive its cluster's replacement.
struct pin_count {
  explicit pin_count(std::shared_ptr<std::atomic<uint32_t>> c) : counter(std::move(c)) {
    // nop
  }
  ~pin_count() {
    counter->fetch_sub(1);
  }
  pin_count(const pin_count&) = delete;
  pin_count& operator=(const pin_count&) = delete;
  std::shared_ptr<std::atomic<uint32_t>> counter;
};

} // namespace

std::shared_ptr<void> cluster_state::try_pin() {
  auto current = pinned_->load();
  do {
    if (current >= max_pinned)
      return nullptr;
  } while (!pinned_->compare_exchange_weak(current, current + 1));
  return std::make_shared<pin_count>(pinned_);
}

void cluster_state::release() {
  running_->give(1);
  if (capacity) // a slot it may give back to the fleet
    signal_capacity();
  if (lease_table && running_->take_wake()) // a worker waits for it
    caf::anon_send(lease_table, atom::tick::value);
  notify_groups(true);
}

void cluster_state::notify_groups(bool waiting_only) const {
  // A group publishes its queue length before it retries a placement, so
  // a waiter is either seen here or finds this slot free itself.
  auto links = groups_.load();
  if (!links)
    return;
  for (const auto& g : *links) {
    auto gate = g.gate.lock();
    // The lane's waiters came before the actor's: while they wait, its
    // queue waits too (the actor serves the lane first when told).
    if (gate && gate->serve_lane() && waiting_only)
      continue;
    auto queued = gate ? gate->actor_queued() : g.queued->load();
    if (!waiting_only || queued > 0)
      caf::anon_send(g.actor, atom::release::value);
  }
}

uint32_t cluster_state::queued() const {
  auto links = groups_.load();
  uint32_t n = 0;
  if (links)
    for (const auto& g : *links)
      n += g.queued ? g.queued->load() : 0;
  return n;
}

std::optional<conn_lease> cluster_state::take_idle() {
  std::lock_guard guard{pool_mtx_};
  if (idle_.empty())
    return std::nullopt;
  auto lease = std::move(idle_.back());
  idle_.pop_back();
  return lease;
}

bool cluster_state::give_back(conn_lease& lease) {
  std::lock_guard guard{pool_mtx_};
  if (retired_ || idle_.size() >= pool_size)
    return false;
  idle_.push_back(std::move(lease));
  return true;
}

void cluster_state::retire_lanes() {
  if (lane)
    lane->retire();
  if (mysql_lane)
    mysql_lane->retire();
}

std::vector<conn_lease> cluster_state::retire_pool() {
  retire_lanes();
  std::lock_guard guard{pool_mtx_};
  retired_ = true;
  return std::exchange(idle_, {});
}

cluster_state::queue_view cluster_state::queue_for(std::string_view user) const {
  std::lock_guard guard{load_mtx_};
  // A reading too old (the monitor failed since, or this node no longer
  // reads counts itself): what is left is the load everyone knows.
  if (steady_ms() > load_expires_ms_)
    return {load(), 0, 0};
  queue_view v{std::max(running(), load_.running), load_.queued, 0};
  if (auto u = load_.user_queued.find(user); u != load_.user_queued.end())
    v.user_queued = u->second;
  return v;
}

void cluster_state::set_engine_load(engines::engine_load load, int64_t valid_ms) {
  std::lock_guard guard{load_mtx_};
  load_ = std::move(load);
  load_expires_ms_ = steady_ms() + valid_ms;
}

void cluster_state::placed_for(std::string_view user) {
  std::lock_guard guard{load_mtx_};
  if (auto u = load_.user_queued.find(user); u != load_.user_queued.end() && u->second > 0) {
    ++u->second;
    ++load_.queued;
  }
}

} // namespace qf
