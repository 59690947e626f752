#include "actors/data/group_gate.hpp"

#include <algorithm>

namespace qf {

group_gate::group_gate(config::cluster_group cfg,
                       std::vector<std::shared_ptr<cluster_state>> members)
  : cfg_(std::move(cfg)),
    members_(std::move(members)),
    postgres_only_(!members_.empty()
                   && std::all_of(members_.begin(), members_.end(), [](const auto& m) {
                        return m->engine_type == "postgres" && m->lane != nullptr;
                      })),
    mysql_only_(!members_.empty()
                && std::all_of(members_.begin(), members_.end(), [](const auto& m) {
                     return m->engine_type == "mysql" && m->mysql_lane != nullptr;
                   })) {
  // nop
}

std::shared_ptr<cluster_state> group_gate::try_place() {
  if (!cfg_.enabled)
    return nullptr;
  // Reused: placing runs per statement on the wire thread's fast lane.
  thread_local std::vector<routing::member_view> views;
  views.clear();
  for (const auto& m : members_)
    views.push_back({m->routable() && m->running() < m->limit, m->load()});
  std::lock_guard guard{strategy_mtx_};
  // A slot can vanish to another group between the look and the take.
  for (size_t attempt = 0; attempt < views.size(); ++attempt) {
    auto chosen = routing::pick(cfg_.strategy, views, strategy_);
    if (!chosen)
      return nullptr;
    if (members_[*chosen]->try_acquire())
      return members_[*chosen];
    views[*chosen].eligible = false;
  }
  return nullptr;
}

std::shared_ptr<cluster_state> group_gate::try_place_newcomer() {
  if (queued_->load() > 0)
    return nullptr;
  return try_place();
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

} // namespace qf
