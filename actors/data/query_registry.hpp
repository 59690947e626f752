// Live Trino queries by id, for the HTTP boundary's nextUri lookups. A
// sharded map rather than an actor: every poll reads it, and a lookup must
// not cost a message round trip. Each entry may carry the query's liveness,
// which the reaper reads instead of each query keeping timers of its own.
#pragma once

#include <caf/actor.hpp>

#include <array>
#include <functional>
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace qf {

/// Milliseconds on the steady clock: what liveness times are measured in.
int64_t steady_ms();

/// What a query publishes about itself for the reaper.
struct query_liveness {
  std::atomic<int64_t> last_activity_ms{steady_ms()};
  std::atomic<int64_t> waiting_since_ms{0}; // 0: no poll is waiting
  std::atomic<bool> finished{false};        // the last page went out
};

/// What GET /admin/queries/running shows of a query. The statement moves
/// its group, cluster and state along as it is routed, admitted and run.
class query_summary {
public:
  query_summary(std::string id_, std::string user_, std::string protocol_,
                std::string sql_preview_)
    : id(std::move(id_)),
      user(std::move(user_)),
      protocol(std::move(protocol_)),
      sql_preview(std::move(sql_preview_)) {
    // nop
  }

  const std::string id;
  const std::string user;
  const std::string protocol;
  const std::string sql_preview;

  struct progress {
    std::string group;
    std::string cluster;
    std::string state = "QUEUED"; // QUEUED, RUNNING
  };

  void update(progress p) {
    std::lock_guard guard{mtx_};
    progress_ = std::move(p);
  }

  progress now() const {
    std::lock_guard guard{mtx_};
    return progress_;
  }

private:
  mutable std::mutex mtx_;
  progress progress_;
};

class query_registry {
public:
  struct entry {
    caf::actor actor;                         // null for entries with canceller
    std::shared_ptr<query_liveness> live;     // may be null
    std::shared_ptr<query_summary> summary;   // may be null
    /// For what is not an actor (PostgreSQL wire sessions and their fast
    /// lane statements): cancels it, from any thread.
    std::function<void()> canceller;
  };

  void add(const std::string& id, caf::actor query,
           std::shared_ptr<query_liveness> live = nullptr,
           std::shared_ptr<query_summary> summary = nullptr);
  void add(const std::string& id, std::function<void()> canceller,
           std::shared_ptr<query_summary> summary = nullptr);
  void remove(const std::string& id);
  std::optional<caf::actor> find(const std::string& id) const;
  /// Cancels the entry's query (not abandoned: its client stays); false
  /// when there is no such entry.
  bool cancel(const std::string& id) const;
  size_t size() const;
  std::vector<entry> all() const;

private:
  struct shard {
    mutable std::mutex mtx;
    std::unordered_map<std::string, entry> queries;
  };

  const shard& shard_of(const std::string& id) const;
  shard& shard_of(const std::string& id);

  std::array<shard, 16> shards_;
};

} // namespace qf
