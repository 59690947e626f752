// What a cluster says it runs and queues now, every client's: read by its
// health checks, weighed by leastLoaded and queryCountBased.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace qf::engines {

struct engine_load {
  uint32_t running = 0;
  uint32_t queued = 0;
  /// Queued queries per user, where the engine says (Trino).
  std::map<std::string, uint32_t, std::less<>> user_queued;

  uint32_t total() const {
    return running + queued;
  }
};

} // namespace qf::engines
