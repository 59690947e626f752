// Slot accounting on a cluster.
#include "actors/data/cluster_state.hpp"

#include "actors/core/messages.hpp"

#include <caf/send.hpp>

namespace qf {

std::string_view to_string(health h) {
  switch (h) {
    case health::pending:
      return "PENDING";
    case health::healthy:
      return "HEALTHY";
    case health::unhealthy:
      return "UNHEALTHY";
    case health::unknown:
      return "UNKNOWN";
  }
  return "UNKNOWN";
}

bool cluster_state::try_acquire() {
  auto current = running.load();
  while (current < limit)
    if (running.compare_exchange_weak(current, current + 1))
      return true;
  return false;
}

void cluster_state::release() {
  running.fetch_sub(1);
  notify_groups();
}

void cluster_state::notify_groups() const {
  for (const auto& g : groups)
    caf::anon_send(g, atom::release::value);
}

} // namespace qf
