#include "actors/node/snapshot_holder.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

namespace qf {

caf::behavior snapshot_holder(caf::stateful_actor<snapshot_holder_state>* self,
                              std::shared_ptr<snapshot_cell> published, fleet_context ctx,
                              fleet_update first) {
  auto& st = self->state;
  st.active = build_fleet(ctx, std::move(first.config), std::move(first.fleet), nullptr,
                          st.retired);
  published->store(st.active);
  // A retired actor that has ended needs no handle any more.
  self->set_down_handler([self](caf::down_msg& msg) {
    std::erase_if(self->state.retired,
                  [&](const caf::actor& a) { return a.address() == msg.source; });
  });
  self->set_exit_handler([self, published](caf::exit_msg& msg) {
    auto& s = self->state;
    published->store(nullptr);
    if (s.active)
      stop_fleet(*s.active);
    for (auto& a : s.retired)
      self->send_exit(a, msg.reason);
    s.retired.clear();
    s.active = nullptr;
    self->quit(msg.reason);
  });
  return {
    [self, published](atom::close, bool expired) {
      // databaseCache expiry: without a config, queries get the
      // protocols' "not configured" errors until the database answers.
      published->store(expired ? nullptr : self->state.active);
    },
    [self, published, ctx](atom::update, fleet_update& next) {
      auto& s = self->state;
      auto known = s.retired.size();
      try {
        s.active = build_fleet(ctx, std::move(next.config), std::move(next.fleet),
                               s.active.get(), s.retired);
      } catch (const std::exception& e) {
        spdlog::error("the new configuration cannot be built: {}", e.what());
        return false;
      }
      published->store(s.active);
      for (auto i = known; i < s.retired.size(); ++i)
        self->monitor(s.retired[i]);
      return true;
    },
  };
}

} // namespace qf
