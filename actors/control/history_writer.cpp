#include "actors/control/history_writer.hpp"

#include <pqxx/pqxx>

#include <array>
#include <utility>

namespace qf {

namespace {

// The batch table lives as long as the connection and empties on commit.
const char* batch_table_ddl = R"(
  CREATE TEMP TABLE IF NOT EXISTS history_batch (
    proxy_query_id TEXT, cluster_group TEXT, cluster_name TEXT,
    engine_type TEXT, frontend_protocol TEXT, username TEXT, catalog TEXT,
    db_name TEXT, sql_preview TEXT, status TEXT, routing_trace TEXT,
    queue_duration_ms BIGINT, execution_duration_ms BIGINT,
    rows_returned BIGINT, error_message TEXT, created_ms BIGINT
  ) ON COMMIT DELETE ROWS)";

constexpr size_t batch_width = 16;

const std::vector<std::string> batch_columns{
  "proxy_query_id", "cluster_group", "cluster_name", "engine_type",
  "frontend_protocol", "username", "catalog", "db_name", "sql_preview",
  "status", "routing_trace", "queue_duration_ms", "execution_duration_ms",
  "rows_returned", "error_message", "created_ms"};

const char* insert_from_batch = R"(
  INSERT INTO query_records (
    proxy_query_id, cluster_group, cluster_name, engine_type,
    frontend_protocol, username, catalog, db_name, sql_preview, status,
    routing_trace, queue_duration_ms, execution_duration_ms, rows_returned,
    error_message, created_at)
  SELECT DISTINCT ON (proxy_query_id)
    proxy_query_id, cluster_group, cluster_name, engine_type,
    frontend_protocol, username, catalog, db_name, sql_preview, status,
    routing_trace::jsonb, queue_duration_ms, execution_duration_ms,
    rows_returned, error_message, to_timestamp(created_ms / 1000.0)
  FROM history_batch
  ORDER BY proxy_query_id, ctid -- within a batch too, the first one wins
  ON CONFLICT (proxy_query_id) DO NOTHING)";

/// NULL for an empty text, so the database says "unknown" rather than "".
const char* or_null(const std::string& s) {
  return s.empty() ? nullptr : s.c_str();
}

/// libpqxx 6.4 streams tuples only (a null const char* is NULL).
template <size_t... I>
auto as_tuple(const std::array<std::string, batch_width>& text, std::index_sequence<I...>) {
  return std::make_tuple(or_null(text[I])...);
}

} // namespace

std::string sql_preview(const std::string& sql, size_t max_bytes) {
  if (sql.size() <= max_bytes)
    return sql;
  auto cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(sql[cut]) & 0xC0) == 0x80)
    --cut; // back to the first byte of a character
  return sql.substr(0, cut);
}

struct history_writer::session {
  explicit session(const std::string& url) : conn(url) {
    pqxx::nontransaction tx{conn};
    tx.exec(batch_table_ddl);
    tx.commit();
  }

  pqxx::connection conn;
};

history_writer::history_writer(std::string url) : url_(std::move(url)) {
  // Connecting waits for the server: it happens on the first write.
}

history_writer::~history_writer() = default;

history_writer::session& history_writer::connected() {
  if (!session_ || !session_->conn.is_open())
    session_ = std::make_unique<session>(url_);
  return *session_;
}

size_t history_writer::write(const std::vector<query_record>& batch) {
  try {
    pqxx::work tx{connected().conn};
    {
      pqxx::stream_to copy{tx, "history_batch", batch_columns};
      for (const auto& r : batch) {
        std::array<std::string, batch_width> text{
          r.proxy_query_id, r.cluster_group, r.cluster_name, r.engine_type,
          r.protocol, r.user, r.catalog, r.schema, sql_preview(r.sql), r.status,
          r.routing_trace, std::to_string(r.queue_duration_ms),
          std::to_string(r.execution_duration_ms), std::to_string(r.rows_returned),
          r.error_message, std::to_string(r.created_at_ms)};
        copy << as_tuple(text, std::make_index_sequence<batch_width>{});
      }
      copy.complete();
    }
    auto inserted = tx.exec(insert_from_batch).affected_rows();
    tx.commit();
    return inserted;
  } catch (...) {
    session_.reset(); // whatever broke, start afresh next time
    throw;
  }
}

size_t history_writer::purge_older_than(uint32_t days) {
  try {
    pqxx::work tx{connected().conn};
    auto r = tx.exec_params("DELETE FROM query_records WHERE created_at < now() - make_interval(days => $1)",
                            static_cast<int>(days));
    tx.commit();
    return r.affected_rows();
  } catch (...) {
    session_.reset();
    throw;
  }
}

} // namespace qf
