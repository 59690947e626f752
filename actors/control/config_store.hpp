// The CONFIG STORE's snapshot side: the snapshot of the config its node
// runs, serialized once per revision, and the long polls of workers parked
// as response promises (no thread each) until the revision changes or
// their hold runs out. It only changes when the node takes a new config,
// so a database that fails or hangs while a new one is read leaves the
// last good snapshot served.
#pragma once

#include "actors/core/interfaces.hpp"

#include <caf/typed_event_based_actor.hpp>

#include <map>
#include <random>

namespace qf {

class metrics;

struct config_store_state {
  static inline const char* name = "config_store";
  std::optional<served_snapshot> current;
  struct waiter {
    std::string since;
    caf::typed_response_promise<snapshot_wait_result> promise;
  };
  std::map<uint64_t, waiter> waiters;
  uint64_t next_waiter = 1;
  std::mt19937_64 rng{std::random_device{}()};
};

config_store_actor::behavior_type
config_store(config_store_actor::stateful_pointer<config_store_state> self,
             std::shared_ptr<metrics> stats);

} // namespace qf
