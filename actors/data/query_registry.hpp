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
#include <string_view>
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
  /// It ended on its engine (its last page may still wait for its client).
  std::atomic<bool> ended{false};
};

/// One statement as GET /admin/queries/running and GET /v1/query show it.
struct statement_view {
  std::string id;
  std::string user;
  std::string protocol;
  std::string group;
  std::string cluster;
  std::string state; // QUEUED, RUNNING
  std::string sql_preview;
};

/// What the running list shows of a statement. A statement's own summary
/// moves its group, cluster and state along as it is routed, admitted and
/// run. A PostgreSQL session's summary is reused by each of its fast-lane
/// statements in turn, so that a statement registers nothing of its own.
class query_summary {
public:
  query_summary(std::string id, std::string user, std::string protocol,
                std::string sql_preview);

  /// A session's: idle until begin().
  query_summary(std::string user, std::string protocol);

  struct progress {
    std::string group;
    std::string cluster;
    std::string state = "QUEUED"; // QUEUED, RUNNING
  };

  void update(progress p);

  /// The session's next statement, running at once.
  void begin(std::string_view id, std::string_view sql_preview,
             std::string_view group, std::string_view cluster);

  /// The session's statement ended.
  void end();

  /// Nothing while a session's summary is idle.
  std::optional<statement_view> view() const;

  /// Whether it shows the statement `id` now.
  bool shows(const std::string& id) const;

private:
  mutable std::mutex mtx_;
  statement_view view_;
  bool idle_ = false;
};

class query_registry {
public:
  struct entry {
    caf::actor actor;                         // null for entries with canceller
    std::shared_ptr<query_liveness> live;     // may be null
    std::shared_ptr<query_summary> summary;   // may be null
    /// For what is not an actor (a PostgreSQL wire session): cancels its
    /// running statement, from any thread.
    std::function<void()> canceller;
    /// A session's: cancels its statement `id` if that still runs.
    std::function<void(const std::string& id)> statement_canceller;
    /// A session's: cancels its statement and closes its connection, then
    /// calls its argument (from the session's thread).
    std::function<void(std::function<void()>)> closer;
    /// A Trino query's nextUri secret (statement_spec::slug).
    std::string slug;
  };

  void add(const std::string& id, caf::actor query,
           std::shared_ptr<query_liveness> live = nullptr,
           std::shared_ptr<query_summary> summary = nullptr, std::string slug = {});
  /// A session, whose summary shows its running statement.
  void add(const std::string& id, std::function<void()> canceller,
           std::function<void(const std::string& id)> statement_canceller,
           std::shared_ptr<query_summary> summary,
           std::function<void(std::function<void()>)> closer = {});
  void remove(const std::string& id);
  std::optional<caf::actor> find(const std::string& id) const;
  /// Whose the query or session is, as its summary says.
  std::optional<std::string> user_of(const std::string& id) const;
  /// The query, if `slug` is its nextUri secret.
  std::optional<caf::actor> find(const std::string& id, std::string_view slug) const;
  /// Cancels the entry's query (not abandoned: its client stays); false
  /// when there is no such entry.
  bool cancel(const std::string& id) const;
  /// Cancels the entry's query and closes its session (MySQL's KILL
  /// CONNECTION), then calls `closed` (once the session's connection is
  /// closed, from its thread; at once for a query); false, and `closed`
  /// never called, when there is no such entry.
  bool close(const std::string& id, std::function<void()> closed) const;
  /// Cancels the statement `id` of the session whose summary shows it;
  /// false when no session runs it.
  bool cancel_statement(const std::string& id) const;
  size_t size() const;
  std::vector<entry> all() const;

private:
  struct shard {
    mutable std::mutex mtx;
    std::unordered_map<std::string, entry> queries;
  };

  std::optional<entry> entry_of(const std::string& id) const;
  const shard& shard_of(const std::string& id) const;
  shard& shard_of(const std::string& id);

  std::array<shard, 16> shards_;
};

} // namespace qf
