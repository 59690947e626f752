#include "actors/node/snapshot_holder.hpp"

#include "actors/node/metrics.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

namespace qf {

namespace {

using self_ptr = snapshot_holder_actor::stateful_pointer<snapshot_holder_state>;

/// Builds `next` on the running config; false (logged) when it cannot be.
bool swap_in(self_ptr self, const snapshot_holder_settings& cfg, fleet_update& next) {
  auto& st = self->state;
  auto known = st.retired.size();
  try {
    st.active = build_fleet(cfg.ctx, std::move(next.config), std::move(next.fleet),
                            st.active.get(), st.retired);
  } catch (const std::exception& e) {
    spdlog::error("the new configuration cannot be built: {}", e.what());
    return false;
  }
  cfg.cell->store(st.active);
  if (cfg.ctx.lease_table) // a limit may have grown
    self->send(caf::actor_cast<lease_table_actor>(cfg.ctx.lease_table), atom::tick::value);
  for (auto i = known; i < st.retired.size(); ++i)
    self->monitor(st.retired[i]);
  if (cfg.store)
    self->send(cfg.store, atom::publish::value,
               worker_api::snapshot_content{st.active->fleet,
                                            worker_api::policy_of(*st.active->config)});
  return true;
}

void set_stale(self_ptr self, const snapshot_holder_settings& cfg, bool stale) {
  self->state.status.stale = stale;
  cfg.ctx.stats->worker_config_stale(stale);
}

} // namespace

snapshot_holder_actor::behavior_type
snapshot_holder(snapshot_holder_actor::stateful_pointer<snapshot_holder_state> self,
                snapshot_holder_settings settings) {
  auto cfg = std::make_shared<snapshot_holder_settings>(std::move(settings));
  if (cfg->first) {
    auto first = std::move(*cfg->first);
    cfg->first.reset();
    self->state.status.source = config_source::file;
    swap_in(self, *cfg, first); // logged if it fails: the node then serves nothing
  }
  // A retired actor that has ended needs no handle any more.
  self->set_down_handler([self](caf::down_msg& msg) {
    std::erase_if(self->state.retired,
                  [&](const caf::actor& a) { return a.address() == msg.source; });
  });
  self->set_exit_handler([self, cfg](caf::exit_msg& msg) {
    auto& s = self->state;
    cfg->cell->store(nullptr);
    if (s.active)
      stop_fleet(*s.active);
    for (auto& a : s.retired)
      self->send_exit(a, msg.reason);
    s.retired.clear();
    s.active = nullptr;
    self->quit(msg.reason);
  });
  return {
    [self, cfg](atom::update, fleet_update& next) { return swap_in(self, *cfg, next); },
    [self, cfg](atom::activate, fleet_update& next, snapshot_origin& origin) {
      if (!swap_in(self, *cfg, next))
        return false;
      auto& status = self->state.status;
      status.revision = origin.encoded->revision;
      status.source = origin.source;
      status.confirmed_at_ms = origin.confirmed_at_ms;
      status.encoded = std::move(origin.encoded);
      set_stale(self, *cfg, status.source == config_source::peer);
      return true;
    },
    [self, cfg](atom::confirm, const std::string& revision, int64_t at_ms) {
      auto& status = self->state.status;
      if (revision != status.revision)
        return;
      status.confirmed_at_ms = at_ms;
      if (status.source == config_source::peer)
        spdlog::info("the control plane confirmed revision {}, copied from a peer", revision);
      status.source = config_source::control_plane;
      set_stale(self, *cfg, false);
    },
    [self, cfg](atom::close, bool expired) {
      // databaseCache expiry: without a config, queries get the
      // protocols' "not configured" errors until the database answers.
      cfg->cell->store(expired ? nullptr : self->state.active);
    },
    [self](atom::get) { return self->state.status; },
  };
}

} // namespace qf
