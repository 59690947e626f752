// Liveness checks over the query registry.
#include "actors/data/query_reaper.hpp"

#include "actors/core/messages.hpp"

#include <caf/all.hpp>

namespace qf {

caf::behavior query_reaper(caf::event_based_actor* self,
                           std::shared_ptr<query_registry> queries,
                           reaper_settings settings) {
  self->delayed_send(self, settings.tick, atom::tick::value);
  return {
    [=](atom::tick) {
      auto now = steady_ms();
      const bool draining = settings.draining && settings.draining->load();
      for (const auto& q : queries->all()) {
        if (!q.live)
          continue;
        const auto& live = *q.live;
        auto idle = now - live.last_activity_ms.load();
        auto waiting = live.waiting_since_ms.load();
        if (live.finished.load()) {
          if (idle >= settings.linger.count())
            self->send_exit(q.actor, caf::exit_reason::user_shutdown);
        } else if (waiting != 0) {
          if (now - waiting >= settings.poll_wait.count())
            self->send(q.actor, atom::deadline::value);
        } else if (idle >= settings.client_timeout.count()
                   || (draining && live.ended.load()
                       && idle >= settings.drain_abandon_after.count())) {
          self->send(q.actor, atom::cancel::value, true);
        }
      }
      self->delayed_send(self, settings.tick, atom::tick::value);
    },
  };
}

} // namespace qf
