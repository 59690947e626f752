// roundRobin, leastLoaded, random, failover, queryCountBased.
#include "actors/routing/strategy.hpp"

#include <tuple>

namespace qf::routing {

std::optional<size_t> pick(config::strategy_kind kind,
                           const std::vector<member_view>& members,
                           strategy_state& state) {
  auto n = members.size();
  switch (kind) {
    case config::strategy_kind::failover:
      for (size_t i = 0; i < n; ++i)
        if (members[i].eligible)
          return i;
      return std::nullopt;
    case config::strategy_kind::round_robin:
      for (size_t k = 0; k < n; ++k) {
        auto i = (state.next + k) % n;
        if (members[i].eligible) {
          state.next = (i + 1) % n;
          return i;
        }
      }
      return std::nullopt;
    case config::strategy_kind::least_loaded: {
      std::optional<size_t> best;
      for (size_t i = 0; i < n; ++i)
        if (members[i].eligible
            && (!best || members[i].running < members[*best].running))
          best = i;
      return best;
    }
    case config::strategy_kind::query_count_based: {
      // Trino Gateway's QueryCountBasedRouter: the fewest of the user's
      // queued queries, then the fewest queued, then the fewest running.
      auto key = [&](size_t i) {
        return std::tuple{members[i].user_queued, members[i].queued, members[i].running};
      };
      std::optional<size_t> best;
      for (size_t i = 0; i < n; ++i)
        if (members[i].eligible && (!best || key(i) < key(*best)))
          best = i;
      return best;
    }
    case config::strategy_kind::random: {
      std::vector<size_t> eligible;
      for (size_t i = 0; i < n; ++i)
        if (members[i].eligible)
          eligible.push_back(i);
      if (eligible.empty())
        return std::nullopt;
      std::uniform_int_distribution<size_t> dist{0, eligible.size() - 1};
      return eligible[dist(state.rng)];
    }
  }
  return std::nullopt;
}

} // namespace qf::routing
