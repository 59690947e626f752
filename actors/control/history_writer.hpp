// Writes query records into query_records (libpqxx, blocking): a batch is
// COPYed into a temporary table, then inserted with ON CONFLICT DO NOTHING,
// so a batch sent twice stores each query once (the first record wins).
#pragma once

#include "actors/core/messages.hpp"

#include <memory>
#include <string>
#include <vector>

namespace qf {

class history_writer {
public:
  explicit history_writer(std::string url);
  ~history_writer();

  history_writer(const history_writer&) = delete;
  history_writer& operator=(const history_writer&) = delete;

  /// Stores the batch; returns how many records were new. Throws
  /// std::exception when the database fails (the batch is then not stored;
  /// the next call reconnects).
  size_t write(const std::vector<query_record>& batch);

  /// Deletes records older than `days`; returns how many.
  size_t purge_older_than(uint32_t days);

private:
  struct session; // the libpqxx connection, kept out of this header

  session& connected();

  std::string url_;
  std::unique_ptr<session> session_;
};

/// The SQL text kept in query_records.sql_preview: at most max_bytes,
/// cut on a UTF-8 character boundary.
std::string sql_preview(const std::string& sql, size_t max_bytes = 16384);

} // namespace qf
