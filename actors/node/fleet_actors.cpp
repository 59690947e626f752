#include "actors/node/fleet_actors.hpp"

#include "actors/data/cluster.hpp"
#include "actors/data/group.hpp"
#include "engines/lane_pool.hpp"
#include "engines/mysql_async_connection.hpp"
#include "engines/postgres_engine.hpp"

#include <caf/all.hpp>

namespace qf {

namespace {

/// A cluster's own limit, else the smallest limit of the groups it is in.
uint32_t effective_limit(const config::gateway_config& cfg, const config::cluster& c) {
  if (c.max_running_queries)
    return *c.max_running_queries;
  std::optional<uint32_t> limit;
  for (const auto& g : cfg.groups)
    for (const auto& m : g.members)
      if (m == c.name)
        limit = std::min(limit.value_or(g.max_running_queries), g.max_running_queries);
  return limit.value_or(1);
}

template <class Map>
auto lookup(const active_config* active, const Map active_config::*map, std::string_view name)
  -> typename Map::mapped_type {
  if (!active)
    return {};
  auto i = (active->*map).find(name);
  return i == (active->*map).end() ? typename Map::mapped_type{} : i->second;
}

/// Same config but perhaps the `enabled` flag, which (de)activation flips
/// without replacing the cluster.
bool same_but_enabled(config::cluster a, const config::cluster& b) {
  a.enabled = b.enabled;
  return a == b;
}

struct activation {
  caf::actor actor;
  bool on;
};

} // namespace

std::shared_ptr<active_config> build_fleet(const fleet_context& ctx,
                                           std::shared_ptr<const config::gateway_config> cfg,
                                           config::fleet fleet, const active_config* before,
                                           std::vector<caf::actor>& retired) {
  auto next = std::make_shared<active_config>();
  next->config = cfg;
  next->fleet = std::move(fleet);
  next->routes = std::make_unique<routing::router_chain>(cfg->routers, cfg->routing_fallback);
  const auto* old_cfg = before ? before->config.get() : nullptr;

  std::vector<std::pair<const config::cluster*, std::shared_ptr<cluster_state>>> fresh;
  std::vector<activation> activations;
  for (const auto& c : cfg->clusters) {
    auto limit = effective_limit(*cfg, c);
    auto old = lookup(before, &active_config::clusters, c.name);
    const auto* was = old_cfg ? old_cfg->find_cluster(c.name) : nullptr;
    if (old && was && old->limit == limit && same_but_enabled(*was, c)) {
      next->clusters.emplace(c.name, old);
      // The fleet's monitor changed (a probe, the interval): the kept
      // cluster checks the new way from its next check, its health as is.
      if (old_cfg->health != cfg->health)
        caf::anon_send(old->actor, atom::update::value, cfg->health);
      if (was->enabled != c.enabled) {
        // The health cache moves before this returns (the spec's table);
        // the cluster actor then checks, or stops checking.
        old->enabled.store(c.enabled);
        old->status.store(c.enabled ? health::pending : health::unknown);
        activations.push_back({old->actor, c.enabled});
      }
      continue;
    }
    // Queries still running on the cluster it replaces count against the
    // same limit.
    auto state = std::make_shared<cluster_state>(
      c.name, std::string{config::to_string(c.engine)}, limit, c.enabled,
      c.pool_size.value_or(0), old ? old->running_counter() : nullptr);
    state->capacity = ctx.capacity;
    state->lease_table = ctx.lease_table;
    if (ctx.capacity && !old) // nothing leased yet (a successor keeps the grant)
      state->running_counter()->set_grant(0);
    state->max_pinned = c.max_pinned_sessions;
    state->pipeline_depth = c.pipeline_depth;
    if (c.engine == config::engine_kind::postgres)
      state->lane = std::make_shared<engines::pg_lane_pool>(engines::postgres_conninfo(c),
                                                            state->pool_size);
    if (c.engine == config::engine_kind::mysql) {
      try {
        state->mysql_lane = std::make_shared<engines::mysql_lane_pool>(
          engines::mysql_target_of(c), state->pool_size);
      } catch (const engines::engine_error&) {
        // nop: no fast lane; the actor path reports the bad endpoint
      }
    }
    next->clusters.emplace(c.name, state);
    fresh.emplace_back(&c, state);
  }

  for (const auto& g : cfg->groups) {
    std::vector<std::shared_ptr<cluster_state>> members;
    for (const auto& m : g.members)
      members.push_back(next->clusters.at(m));
    auto old = lookup(before, &active_config::groups, g.name);
    const auto* was = old_cfg ? old_cfg->find_group(g.name) : nullptr;
    bool same_members = was && was->members == g.members;
    for (size_t i = 0; same_members && i < members.size(); ++i)
      same_members = before->clusters.at(g.members[i]) == members[i];
    if (old && was && *was == g && same_members) {
      next->groups.emplace(g.name, old);
      next->group_gates.emplace(g.name, lookup(before, &active_config::group_gates, g.name));
      continue;
    }
    auto gate = std::make_shared<group_gate>(g, members, ctx.stats);
    next->groups.emplace(g.name, ctx.sys->spawn(group_actor, gate, ctx.stats));
    next->group_gates.emplace(g.name, std::move(gate));
  }

  // Every cluster learns whom to wake; a replaced one too, since queries
  // still running on it free slots that the new groups wait for.
  for (auto& [name, state] : next->clusters) {
    cluster_state::group_links links;
    for (const auto& g : cfg->groups)
      if (std::find(g.members.begin(), g.members.end(), name) != g.members.end())
        links.push_back({next->groups.at(g.name), next->group_gates.at(g.name)->queued(),
                         next->group_gates.at(g.name)});
    if (auto old = lookup(before, &active_config::clusters, name); old && old != state)
      old->set_groups(links);
    state->set_groups(std::move(links));
  }

  // Clusters start checking only once their groups are known, so that a
  // first HEALTHY wakes every group that waits on them. Clusters added
  // later do not hold back readiness, which the first round decides.
  auto round = before ? std::make_shared<first_health_round>() : ctx.first_round;
  for (auto& [c, state] : fresh) {
    if (c->enabled)
      round->pending.fetch_add(1); // before the config is published
    state->actor = ctx.sys->spawn(cluster_actor, *c, cfg->health, state, ctx.stats, round,
                                  ctx.counting);
  }

  if (before) {
    for (const auto& [name, old] : before->clusters) {
      if (lookup(next.get(), &active_config::clusters, name) == old)
        continue;
      bool deleted = !next->clusters.contains(name);
      if (deleted)
        old->set_groups({});
      caf::anon_send(old->actor, atom::retire::value, deleted);
      retired.push_back(old->actor);
    }
    for (const auto& [name, old] : before->groups) {
      auto now = lookup(next.get(), &active_config::groups, name);
      if (now == old)
        continue;
      caf::anon_send(old, atom::retire::value, now);
      retired.push_back(old);
    }
  }
  for (auto& a : activations)
    caf::anon_send(a.actor, atom::activate::value, a.on);
  return next;
}

void stop_fleet(const active_config& active) {
  for (const auto& [name, g] : active.groups)
    caf::anon_send_exit(g, caf::exit_reason::user_shutdown);
  // Clusters and groups hold handles to each other; break the cycle.
  for (const auto& [name, c] : active.clusters) {
    caf::anon_send_exit(c->actor, caf::exit_reason::user_shutdown);
    c->set_groups({});
  }
}

} // namespace qf
