// Sharded id -> query actor map.
#include "actors/data/query_registry.hpp"

#include "actors/core/messages.hpp"

#include <caf/send.hpp>

#include <chrono>
#include <functional>

namespace qf {

const query_registry::shard&
query_registry::shard_of(const std::string& id) const {
  return shards_[std::hash<std::string>{}(id) % shards_.size()];
}

query_registry::shard& query_registry::shard_of(const std::string& id) {
  return shards_[std::hash<std::string>{}(id) % shards_.size()];
}

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
           std::chrono::steady_clock::now().time_since_epoch())
    .count();
}

void query_registry::add(const std::string& id, caf::actor query,
                         std::shared_ptr<query_liveness> live,
                         std::shared_ptr<query_summary> summary) {
  auto& s = shard_of(id);
  std::lock_guard guard{s.mtx};
  s.queries[id] = entry{std::move(query), std::move(live), std::move(summary), {}};
}

void query_registry::add(const std::string& id, std::function<void()> canceller,
                         std::shared_ptr<query_summary> summary) {
  auto& s = shard_of(id);
  std::lock_guard guard{s.mtx};
  s.queries[id] = entry{nullptr, nullptr, std::move(summary), std::move(canceller)};
}

bool query_registry::cancel(const std::string& id) const {
  entry e;
  {
    const auto& s = shard_of(id);
    std::lock_guard guard{s.mtx};
    auto i = s.queries.find(id);
    if (i == s.queries.end())
      return false;
    e = i->second;
  }
  // Outside the lock: a canceller may take locks of its own.
  if (e.canceller)
    e.canceller();
  else if (e.actor)
    caf::anon_send(e.actor, atom::cancel::value, false);
  return true;
}

void query_registry::remove(const std::string& id) {
  auto& s = shard_of(id);
  std::lock_guard guard{s.mtx};
  s.queries.erase(id);
}

std::optional<caf::actor> query_registry::find(const std::string& id) const {
  const auto& s = shard_of(id);
  std::lock_guard guard{s.mtx};
  auto i = s.queries.find(id);
  if (i == s.queries.end())
    return std::nullopt;
  return i->second.actor;
}

size_t query_registry::size() const {
  size_t n = 0;
  for (const auto& s : shards_) {
    std::lock_guard guard{s.mtx};
    n += s.queries.size();
  }
  return n;
}

} // namespace qf

namespace qf {

std::vector<query_registry::entry> query_registry::all() const {
  std::vector<entry> out;
  for (const auto& s : shards_) {
    std::lock_guard guard{s.mtx};
    for (const auto& [id, e] : s.queries)
      out.push_back(e);
  }
  return out;
}

} // namespace qf
