// The QUERY REAPER: one timer for all Trino queries instead of timers in
// each. Every tick it looks at each live query's published liveness and
// answers a poll that waited long enough, cancels a query whose client
// stopped polling, and ends a finished query once its linger is over.
#pragma once

#include "actors/data/query_registry.hpp"

#include <caf/fwd.hpp>

#include <atomic>
#include <chrono>
#include <memory>

namespace qf {

struct reaper_settings {
  std::chrono::milliseconds tick{200};
  std::chrono::milliseconds poll_wait{1000};   // a GET waits this for rows
  std::chrono::milliseconds linger{3000};      // a finished query stays
  std::chrono::milliseconds client_timeout{300000};
  /// Set while the node drains: a query that ended on its engine and
  /// whose client has not polled for `drain_abandon_after` is abandoned
  /// (recorded as such) instead of holding the shutdown. Running queries
  /// still finish.
  std::shared_ptr<const std::atomic<bool>> draining;
  std::chrono::milliseconds drain_abandon_after{3000};
};

/// Handler: (tick), INTERNAL.
caf::behavior query_reaper(caf::event_based_actor* self,
                           std::shared_ptr<query_registry> queries,
                           reaper_settings settings);

} // namespace qf
