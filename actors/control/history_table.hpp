// query_records through libpqxx (blocking): writes batches, searches them
// for the admin API, purges old ones. A batch is COPYed into a temporary
// table, then inserted with ON CONFLICT DO NOTHING, so a batch sent twice
// stores each query once (the first record wins).
#pragma once

#include "actors/core/messages.hpp"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace qf {

class history_table {
public:
  explicit history_table(std::string url);
  ~history_table();

  history_table(const history_table&) = delete;
  history_table& operator=(const history_table&) = delete;

  /// Stores the batch; returns how many records were new. Throws
  /// std::exception when the database fails (the batch is then not stored;
  /// the next call reconnects).
  size_t write(const std::vector<query_record>& batch);

  /// Deletes records older than `days`; returns how many.
  size_t purge_older_than(uint32_t days);

  /// {"total":N,"queries":[...]}, newest first, in the JSON of history_ring.
  std::string list(const history_filter& f);

  /// One record's JSON, if there is one.
  std::optional<std::string> get(const std::string& proxy_query_id);

  /// Fills `b` with the records that arrived in its buckets.
  void count(query_buckets& b);

private:
  struct session; // the libpqxx connection, kept out of this header

  session& connected();

  template <class F>
  auto in_transaction(F f);

  std::string url_;
  std::unique_ptr<session> session_;
};

} // namespace qf
