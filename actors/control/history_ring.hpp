// Finished query records in memory: a bounded ring, newest first, searchable
// for GET /admin/queries. Thread-safe and lock-brief, so a query records
// itself without a message; the PostgreSQL history store (a batching actor)
// will drain the same records.
#pragma once

#include "actors/core/messages.hpp"

#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>

namespace qf {

class history_ring {
public:
  explicit history_ring(size_t capacity);

  /// Keeps r; the first record of a proxy query id wins.
  void record(query_record r);

  /// {"total":N,"queries":[...]} for the records the filter selects.
  std::string list(const history_filter& f) const;

  /// The JSON of one record.
  std::optional<std::string> get(const std::string& id) const;

private:
  size_t capacity_;
  mutable std::mutex mtx_;
  std::deque<query_record> records_; // newest at the front
  /// Views of the records' own ids: a deque keeps its elements in place
  /// when it grows or shrinks at either end.
  std::unordered_set<std::string_view> ids_;
};

/// The JSON object of one record (camelCase keys).
std::string to_json(const query_record& r);

} // namespace qf
