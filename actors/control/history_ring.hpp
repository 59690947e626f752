// Finished query records in memory: a bounded ring, newest first, searchable
// for GET /admin/queries. Thread-safe and lock-brief, so a query records
// itself without a message; the PostgreSQL history store (a batching actor)
// will drain the same records.
#pragma once

#include "actors/core/messages.hpp"

#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace qf {

class history_ring {
public:
  explicit history_ring(size_t capacity);

  /// Keeps r. A query records itself once; should one record twice, the
  /// first record wins, as long as the two are among the last
  /// `duplicate_window` records (durable history dedupes for good).
  void record(query_record r);

  static constexpr size_t duplicate_window = 16;

  /// {"total":N,"queries":[...]} for the records the filter selects.
  std::string list(const history_filter& f) const;

  /// The JSON of one record.
  std::optional<std::string> get(const std::string& id) const;
  /// One record.
  std::optional<query_record> record(const std::string& id) const;

  /// Fills `b` with the records that arrived in its buckets.
  void count(query_buckets& b) const;

private:
  /// The i-th newest record's bytes; i < records_.size().
  const std::string& newest(size_t i) const;

  size_t capacity_;
  mutable std::mutex mtx_;
  /// A circle once full: the next record overwrites the oldest, at next_.
  /// Packed (actors/control/packed_record): one buffer per record.
  std::vector<std::string> records_;
  size_t next_ = 0;
};

/// The JSON object of one record (camelCase keys).
std::string to_json(const query_record& r);

} // namespace qf
