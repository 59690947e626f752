#include "actors/data/group_gate.hpp"

#include "actors/node/metrics.hpp"

#include <algorithm>

namespace qf {

group_gate::group_gate(config::cluster_group cfg,
                       std::vector<std::shared_ptr<cluster_state>> members,
                       std::shared_ptr<metrics> stats)
  : cfg_(std::move(cfg)),
    members_(std::move(members)),
    postgres_only_(!members_.empty()
                   && std::all_of(members_.begin(), members_.end(), [](const auto& m) {
                        return m->engine_type == "postgres" && m->lane != nullptr;
                      })),
    mysql_only_(!members_.empty()
                && std::all_of(members_.begin(), members_.end(), [](const auto& m) {
                     return m->engine_type == "mysql" && m->mysql_lane != nullptr;
                   })),
    stats_(std::move(stats)) {
  // nop
}

std::shared_ptr<cluster_state> group_gate::try_place(std::string_view user) {
  if (!cfg_.enabled)
    return nullptr;
  bool by_count = cfg_.strategy == config::strategy_kind::query_count_based;
  // Reused: placing runs per statement on the wire thread's fast lane.
  thread_local std::vector<routing::member_view> views;
  views.clear();
  for (const auto& m : members_) {
    routing::member_view v{m->routable() && m->running() < m->limit, m->load()};
    if (by_count) {
      auto q = m->queue_for(user);
      v.running = q.running;
      v.queued = q.queued;
      v.user_queued = q.user_queued;
    }
    views.push_back(v);
  }
  std::lock_guard guard{strategy_mtx_};
  // A slot can vanish to another group between the look and the take.
  for (size_t attempt = 0; attempt < views.size(); ++attempt) {
    auto chosen = routing::pick(cfg_.strategy, views, strategy_);
    if (!chosen)
      return nullptr;
    if (members_[*chosen]->try_acquire()) {
      if (by_count)
        members_[*chosen]->placed_for(user);
      return members_[*chosen];
    }
    views[*chosen].eligible = false;
  }
  return nullptr;
}

std::shared_ptr<cluster_state> group_gate::try_place_newcomer(std::string_view user) {
  if (queued_->load() > 0)
    return nullptr;
  return try_place(user);
}

bool group_gate::has_member(const cluster_state& cluster) const {
  return std::any_of(members_.begin(), members_.end(),
                     [&](const auto& m) { return m.get() == &cluster; });
}

std::shared_ptr<cluster_state> group_gate::try_place_on(std::string_view name) {
  if (!cfg_.enabled)
    return nullptr;
  for (const auto& m : members_)
    if (m->name == name)
      return m->routable() && m->try_acquire() ? m : nullptr;
  return nullptr;
}

std::shared_ptr<cluster_state> group_gate::try_place_newcomer_on(std::string_view name) {
  if (queued_->load() > 0)
    return nullptr;
  return try_place_on(name);
}

std::string queue_timeout_message(const std::string& group, std::chrono::seconds waited) {
  return "query waited longer than capacityWaitTimeoutSecs (" + std::to_string(waited.count())
         + "s) for capacity in cluster group \"" + group + "\"";
}

void group_gate::publish_queued() {
  lane_size_.store(static_cast<uint32_t>(lane_.size()));
  auto n = actor_queued_.load() + static_cast<uint32_t>(lane_.size());
  queued_->store(n);
  if (stats_)
    stats_->queued_set(cfg_.name, n);
}

void group_gate::set_actor_queued(uint32_t n) {
  std::lock_guard guard{lane_mtx_};
  actor_queued_.store(n);
  publish_queued();
}

bool group_gate::wait_in_lane(lane_waiter& w) {
  {
    std::lock_guard guard{lane_mtx_};
    if (lane_closed_ || !cfg_.enabled || actor_queued_.load() > 0
        || actor_queued_.load() + lane_.size() >= cfg_.max_queued_queries)
      return false;
    lane_.push_back(std::move(w));
    publish_queued();
  }
  // Queued first, then tried: a slot freed in between is not lost.
  serve_lane();
  return true;
}

bool group_gate::leave_lane(uint64_t ticket) {
  std::lock_guard guard{lane_mtx_};
  auto it = std::find_if(lane_.begin(), lane_.end(),
                         [&](const lane_waiter& w) { return w.ticket == ticket; });
  if (it == lane_.end())
    return false;
  lane_.erase(it);
  publish_queued();
  return true;
}

bool group_gate::serve_lane() {
  // Per release on the fast lane: no lock while nobody waits (a waiter
  // that comes meanwhile tries for itself after queueing).
  if (lane_size_.load() == 0)
    return false;
  std::vector<std::pair<std::function<void(std::shared_ptr<cluster_state>)>,
                        std::shared_ptr<cluster_state>>>
    admitted;
  bool left;
  {
    std::lock_guard guard{lane_mtx_};
    for (auto w = lane_.begin(); w != lane_.end();) {
      auto cluster = w->only.empty() ? try_place(w->user) : try_place_on(w->only);
      if (!cluster) {
        if (w->only.empty())
          break;
        ++w;
        continue;
      }
      admitted.emplace_back(std::move(w->admit), std::move(cluster));
      w = lane_.erase(w);
    }
    if (!admitted.empty())
      publish_queued();
    left = !lane_.empty();
  }
  for (auto& [admit, cluster] : admitted)
    admit(std::move(cluster));
  return left;
}

bool group_gate::lane_waiting() const {
  return lane_size_.load() > 0;
}

void group_gate::close_lane() {
  std::deque<lane_waiter> told;
  {
    std::lock_guard guard{lane_mtx_};
    lane_closed_ = true;
    told.swap(lane_);
    lane_size_.store(0);
    // Not published as the metric: the successor's queue has the name now.
    queued_->store(actor_queued_.load());
  }
  for (auto& w : told)
    w.admit(nullptr);
}

} // namespace qf
