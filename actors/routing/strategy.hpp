// Cluster selection strategies: which eligible member gets the next query.
#pragma once

#include "protocols/config/model.hpp"

#include <cstdint>
#include <optional>
#include <random>
#include <vector>

namespace qf::routing {

/// A member as the strategy sees it.
struct member_view {
  bool eligible = false; // enabled, HEALTHY and under its limit
  uint32_t running = 0;
  /// queryCountBased only: what the cluster queues, all and the user's.
  uint32_t queued = 0;
  uint32_t user_queued = 0;
};

/// Remembers what a strategy needs between picks (round-robin position).
struct strategy_state {
  size_t next = 0;
  std::mt19937_64 rng{std::random_device{}()};
};

/// The index of the chosen member, or nullopt when none is eligible.
std::optional<size_t> pick(config::strategy_kind kind,
                           const std::vector<member_view>& members,
                           strategy_state& state);

} // namespace qf::routing
