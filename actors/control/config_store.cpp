#include "actors/control/config_store.hpp"

#include "actors/node/metrics.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

namespace qf {

config_store_actor::behavior_type
config_store(config_store_actor::stateful_pointer<config_store_state> self,
             std::shared_ptr<metrics> stats) {
  // Parked polls are promises in this state: a store that goes without
  // answering them would leave each asker waiting out its whole timeout.
  self->set_exit_handler([self](caf::exit_msg& msg) {
    for (auto& [id, w] : self->state.waiters)
      w.promise.deliver(make_error(errc::not_configured, "the control plane is shutting down"));
    self->state.waiters.clear();
    self->quit(msg.reason);
  });
  return {
    [self, stats](atom::publish, const worker_api::snapshot_content& content) {
      auto& st = self->state;
      std::string error;
      auto encoded = worker_api::encode(content, error);
      if (!encoded) {
        // The node runs it, but workers could not read it: they keep the
        // last one, as they would after a failed build.
        spdlog::error("the configuration cannot be served to workers: {}", error);
        stats->config_reload_failed("snapshot");
        return;
      }
      if (st.current && st.current->revision == encoded->revision)
        return; // the same config again (a reload that changed nothing)
      st.current = served_snapshot{
        encoded->revision,
        std::make_shared<const std::string>(worker_api::config_body(*encoded))};
      spdlog::info("serving workers configuration revision {}", encoded->revision);
      // One broadcast: every parked poll is answered with the same bytes.
      auto waiting = std::move(st.waiters);
      st.waiters.clear();
      for (auto& [id, w] : waiting)
        w.promise.deliver(snapshot_wait_result{st.current});
      stats->workers_waiting(0);
    },
    [self](atom::get) -> caf::result<served_snapshot> {
      if (!self->state.current)
        return make_error(errc::not_configured, "no configuration to serve yet");
      return *self->state.current;
    },
    [self, stats](atom::wait, const std::string& since,
                  caf::timespan hold) -> caf::result<snapshot_wait_result> {
      auto& st = self->state;
      if (st.current && st.current->revision != since)
        return snapshot_wait_result{st.current};
      auto id = st.next_waiter++;
      auto promise = self->make_response_promise<snapshot_wait_result>();
      st.waiters.emplace(id, config_store_state::waiter{since, promise});
      // Up to 1/16 more, as Consul's blocking queries do: workers that
      // started together spread out instead of polling in step.
      std::uniform_int_distribution<int64_t> spread{0, hold.count() / 16};
      auto jitter = caf::timespan{spread(st.rng)};
      self->delayed_send(self, hold + jitter, atom::timeout::value, id);
      stats->workers_waiting(st.waiters.size());
      return promise;
    },
    [self, stats](atom::timeout, uint64_t id) {
      auto& st = self->state;
      auto i = st.waiters.find(id);
      if (i == st.waiters.end())
        return; // answered by a change already
      i->second.promise.deliver(snapshot_wait_result{});
      st.waiters.erase(i);
      stats->workers_waiting(st.waiters.size());
    },
  };
}

} // namespace qf
