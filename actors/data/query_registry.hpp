// Live Trino queries by id, for the HTTP boundary's nextUri lookups. A
// sharded map rather than an actor: every poll reads it, and a lookup must
// not cost a message round trip.
#pragma once

#include <caf/actor.hpp>

#include <array>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace qf {

class query_registry {
public:
  void add(const std::string& id, caf::actor query);
  void remove(const std::string& id);
  std::optional<caf::actor> find(const std::string& id) const;
  size_t size() const;
  std::vector<caf::actor> all() const;

private:
  struct shard {
    mutable std::mutex mtx;
    std::unordered_map<std::string, caf::actor> queries;
  };

  const shard& shard_of(const std::string& id) const;
  shard& shard_of(const std::string& id);

  std::array<shard, 16> shards_;
};

} // namespace qf
