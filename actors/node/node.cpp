// Composition of one node's actors from a validated config.
#include "actors/node/node.hpp"

#include "actors/control/config_writer.hpp"
#include "actors/control/history_store.hpp"
#include "actors/data/group.hpp"
#include "actors/data/query_reaper.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <ctime>
#include <random>

namespace qf {

namespace {

/// The SNAPSHOT HOLDER: owns the active config and publishes it to the
/// atomic cell the hot path reads. (get) -> the number of swaps so far.
caf::behavior snapshot_holder(caf::event_based_actor* self,
                              std::shared_ptr<snapshot_cell> cell,
                              std::shared_ptr<const active_config> first) {
  auto swaps = std::make_shared<uint64_t>(1);
  cell->store(std::move(first));
  self->set_exit_handler([self, cell](caf::exit_msg& msg) {
    cell->store(nullptr);
    self->quit(msg.reason);
  });
  return {
    [swaps](atom::get) { return *swaps; },
  };
}

/// A cluster's own limit, else the smallest limit of the groups it is in.
uint32_t effective_limit(const config::gateway_config& cfg,
                         const config::cluster& c) {
  if (c.max_running_queries)
    return *c.max_running_queries;
  std::optional<uint32_t> limit;
  for (const auto& g : cfg.groups)
    for (const auto& m : g.members)
      if (m == c.name)
        limit = std::min(limit.value_or(g.max_running_queries),
                         g.max_running_queries);
  return limit.value_or(1);
}

} // namespace

std::string node_services::query_id(uint64_t ticket, std::string_view prefix) const {
  auto now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d%02d%02d_%02d%02d%02d_%05llu_",
                utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour,
                utc.tm_min, utc.tm_sec, static_cast<unsigned long long>(ticket % 100000));
  return std::string{prefix} + buf + node_suffix + "_" + std::to_string(ticket);
}

node::node(caf::actor_system& sys, const config::gateway_config& cfg)
  : services_(std::make_shared<node_services>()) {
  auto& svc = *services_;
  std::random_device rd;
  static constexpr char alphabet[] = "abcdefghijkmnpqrstuvwxyz23456789";
  for (int i = 0; i < 5; ++i)
    svc.node_suffix += alphabet[rd() % (sizeof(alphabet) - 1)];
  svc.sys = &sys;
  svc.stats = std::make_shared<metrics>();
  svc.queries = std::make_shared<query_registry>();
  svc.wire_sessions = std::make_shared<query_registry>();
  svc.wire_statements = std::make_shared<query_registry>();
  svc.snapshot = std::make_shared<snapshot_cell>();
  svc.first_round = std::make_shared<first_health_round>();
  svc.external_address = cfg.queryflux.external_address;
  svc.trino = cfg.queryflux.trino_http;
  svc.history = std::make_shared<history_ring>(
    size_t{cfg.queryflux.query_history_capacity});

  auto active = std::make_shared<active_config>();
  active->config = std::make_shared<const config::gateway_config>(cfg);
  active->routes = std::make_unique<routing::router_chain>(
    cfg.routers, cfg.routing_fallback);
  for (const auto& c : cfg.clusters) {
    auto state = std::make_shared<cluster_state>(
      c.name, std::string{config::to_string(c.engine)},
      effective_limit(cfg, c), c.enabled, c.pool_size.value_or(0));
    active->clusters.emplace(c.name, state);
  }
  for (const auto& g : cfg.groups) {
    std::vector<std::shared_ptr<cluster_state>> members;
    for (const auto& m : g.members)
      members.push_back(active->clusters.at(m));
    auto queued = std::make_shared<std::atomic<uint32_t>>(0);
    auto actor = sys.spawn(group_actor, g, members, svc.stats, queued);
    for (auto& m : members)
      m->groups.push_back({actor, queued});
    active->groups.emplace(g.name, actor);
    actors_.push_back(actor);
  }
  // Clusters start checking only once their groups are known, so that a
  // first HEALTHY wakes every group that waits on them.
  for (const auto& c : cfg.clusters) {
    auto& state = active->clusters.at(c.name);
    state->actor = sys.spawn(cluster_actor, c, cfg.health, state, svc.stats,
                             svc.first_round);
    actors_.push_back(state->actor);
  }
  reaper_settings reaping;
  reaping.client_timeout = cfg.queryflux.trino_http.query_client_timeout;
  actors_.push_back(sys.spawn(query_reaper, svc.queries, reaping));
  if (cfg.queryflux.persistence.type == "postgres") {
    svc.outbox = std::make_shared<history_outbox>(100'000);
    history_store_settings hs;
    hs.url = cfg.queryflux.persistence.url;
    hs.retention_days = cfg.queryflux.query_history_retention_days;
    svc.history_store = sys.spawn<caf::detached>(history_store, svc.outbox,
                                                 svc.stats, hs);
    actors_.push_back(svc.history_store);
    svc.config_writer = sys.spawn<caf::detached>(config_writer, hs.url);
    actors_.push_back(svc.config_writer);
  }
  svc.snapshot_holder = sys.spawn(snapshot_holder, svc.snapshot,
                                  std::shared_ptr<const active_config>{active});
  actors_.push_back(svc.snapshot_holder);
  active_ = std::move(active);
}

node::~node() {
  stop();
}

void node::flush_history(std::chrono::milliseconds timeout) {
  auto store = services_->history_store;
  if (!store)
    return;
  caf::scoped_actor self{*services_->sys};
  self->request(store, timeout, atom::flush::value)
    .receive(
      [](uint64_t left) {
        if (left > 0)
          spdlog::warn("query history: {} records not written at shutdown", left);
      },
      [](caf::error&) { spdlog::warn("query history: the final flush timed out"); });
}

void node::stop() {
  for (auto& a : actors_)
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  actors_.clear();
  // Clusters and groups hold handles to each other; break the cycle.
  if (active_)
    for (auto& [name, c] : active_->clusters) {
      c->groups.clear();
      c->actor = nullptr;
    }
  active_ = nullptr;
  services_->snapshot->store(nullptr);
}

} // namespace qf
