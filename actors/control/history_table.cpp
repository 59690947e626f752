#include "actors/control/history_table.hpp"

#include "actors/control/database_url.hpp"
#include "actors/control/history_ring.hpp"
#include "protocols/common/json_writer.hpp"
#include "protocols/common/temporal.hpp"
#include "protocols/sql/statements.hpp"
#include "protocols/worker_api/history_batch.hpp"

#include <pqxx/pqxx>

#include <array>
#include <deque>
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
    rows_returned BIGINT, error_message TEXT, created_ms BIGINT,
    source TEXT, started_ms BIGINT, finished_ms BIGINT, worker TEXT,
    query_hash BIGINT, query_parameterized_hash BIGINT, backend_query_id TEXT,
    external_url TEXT
  ) ON COMMIT DELETE ROWS)";

constexpr size_t batch_width = 24;

const std::vector<std::string> batch_columns{
  "proxy_query_id", "cluster_group", "cluster_name", "engine_type",
  "frontend_protocol", "username", "catalog", "db_name", "sql_preview",
  "status", "routing_trace", "queue_duration_ms", "execution_duration_ms",
  "rows_returned", "error_message", "created_ms", "source", "started_ms",
  "finished_ms", "worker", "query_hash", "query_parameterized_hash", "backend_query_id",
  "external_url"};

const char* insert_from_batch = R"(
  INSERT INTO query_records (
    proxy_query_id, cluster_group, cluster_name, engine_type,
    frontend_protocol, username, catalog, db_name, sql_preview, status,
    routing_trace, queue_duration_ms, execution_duration_ms, rows_returned,
    error_message, created_at, source, started_at, finished_at, worker, query_hash,
    query_parameterized_hash, backend_query_id, external_url)
  SELECT DISTINCT ON (proxy_query_id)
    proxy_query_id, cluster_group, cluster_name, engine_type,
    frontend_protocol, username, catalog, db_name, sql_preview, status,
    routing_trace::jsonb, queue_duration_ms, execution_duration_ms,
    rows_returned, error_message,
    CASE WHEN created_ms > 0 THEN to_timestamp(created_ms / 1000.0) ELSE now() END, source,
    CASE WHEN started_ms > 0 THEN to_timestamp(started_ms / 1000.0) END,
    CASE WHEN finished_ms > 0 THEN to_timestamp(finished_ms / 1000.0) END,
    worker, query_hash, query_parameterized_hash, backend_query_id, external_url
  FROM history_batch
  ORDER BY proxy_query_id, ctid -- within a batch too, the first one wins
  ON CONFLICT (proxy_query_id) DO NOTHING)";

// The same columns straight into query_records, times as timestamps.
std::vector<std::string> as_stored(std::vector<std::string> columns) {
  for (auto& c : columns)
    if (c == "created_ms" || c == "started_ms" || c == "finished_ms")
      c.replace(c.size() - 2, 2, "at");
  return columns;
}

const std::vector<std::string> direct_columns = as_stored(batch_columns);

/// NULL for an empty text, so the database says "unknown" rather than "".
const char* or_null(const std::string& s) {
  return s.empty() ? nullptr : s.c_str();
}

/// libpqxx 6.4 streams tuples only (a null const char* is NULL).
template <size_t... I>
auto as_tuple(const std::array<const char*, batch_width>& text, std::index_sequence<I...>) {
  return std::make_tuple(text[I]...);
}

/// A time in milliseconds since the epoch as timestamptz text; "" (NULL)
/// for 0, a time never reached.
std::string timestamp_text(int64_t ms) {
  return ms > 0 ? utc_text(ms, utc_style::postgres) : std::string{};
}

enum class timestamps { as_ms, as_text };

/// Streams the batch into `table`'s `columns` (batch_columns' order).
void copy_rows(pqxx::work& tx, const char* table, const std::vector<std::string>& columns,
               const std::vector<query_record>& batch, timestamps times) {
  pqxx::stream_to copy{tx, table, columns};
  auto time = [times](int64_t ms) {
    return times == timestamps::as_text ? timestamp_text(ms) : std::to_string(ms);
  };
  auto hash = [](int64_t h) { return h == 0 ? std::string{} : std::to_string(h); };
  // The numbers as text, and the SQL when it is cut; the other fields are
  // streamed from the record itself, unless they hold what PostgreSQL does
  // not store (a NUL, malformed UTF-8): one such record would fail its
  // batch every time, and every batch after it.
  std::array<std::string, 9> made;
  std::deque<std::string> cleaned;
  auto text = [&cleaned](const std::string& s) -> const char* {
    if (s.empty())
      return nullptr;
    if (json_text::storable_text(s))
      return s.c_str();
    return cleaned.emplace_back(json_text::as_storable_text(s)).c_str();
  };
  for (const auto& r : batch) {
    cleaned.clear();
    // Fingerprints are filled as records are written down.
    auto prints = worker_api::fingerprints_of(r);
    auto sql_text = sql::preview(r.sql, 16384);
    made = {std::to_string(r.queue_duration_ms), std::to_string(r.execution_duration_ms),
            std::to_string(r.rows_returned),
            // A record without its creation time (none of ours) is stored now.
            times == timestamps::as_text && r.created_at_ms <= 0 ? "now" : time(r.created_at_ms),
            time(r.started_at_ms), time(r.finished_at_ms), hash(prints.query),
            hash(prints.parameterized),
            sql_text.size() < r.sql.size() ? std::string{sql_text} : std::string{}};
    std::array<const char*, batch_width> fields{
      text(r.proxy_query_id), text(r.cluster_group), text(r.cluster_name),
      text(r.engine_type), text(r.protocol), text(r.user), text(r.catalog),
      text(r.schema), text(made[8].empty() ? r.sql : made[8]),
      text(r.status), text(r.routing_trace), or_null(made[0]), or_null(made[1]),
      or_null(made[2]), text(r.error_message), or_null(made[3]), text(r.source),
      or_null(made[4]), or_null(made[5]), text(r.worker), or_null(made[6]),
      or_null(made[7]), text(r.backend_query_id), text(r.external_url)};
    copy << as_tuple(fields, std::make_index_sequence<batch_width>{});
  }
  copy.complete();
}

// The columns a record is read back from, in query_record's order.
const char* record_columns = R"(
  proxy_query_id, coalesce(username, ''), coalesce(source, ''),
  coalesce(catalog, ''), coalesce(db_name, ''), coalesce(cluster_group, ''),
  coalesce(cluster_name, ''), coalesce(engine_type, ''), frontend_protocol,
  coalesce(sql_preview, ''), status, coalesce(error_message, ''),
  coalesce(routing_trace::text, ''),
  (extract(epoch FROM created_at) * 1000)::bigint,
  coalesce((extract(epoch FROM started_at) * 1000)::bigint, 0),
  coalesce((extract(epoch FROM finished_at) * 1000)::bigint, 0),
  coalesce(queue_duration_ms, 0), coalesce(execution_duration_ms, 0),
  coalesce(rows_returned, 0), coalesce(worker, ''), coalesce(query_hash, 0),
  coalesce(query_parameterized_hash, 0), coalesce(backend_query_id, ''),
  coalesce(external_url, ''))";

// The filters of GET /admin/queries; an empty or zero one matches all.
const char* filter_clause = R"(
  WHERE ($1 = '' OR strpos(sql_preview, $1) > 0)
    AND ($2 = '' OR username = $2) AND ($3 = '' OR cluster_group = $3)
    AND ($4 = '' OR cluster_name = $4) AND ($5 = '' OR status = $5)
    AND ($6::bigint = 0 OR created_at >= to_timestamp($6::bigint / 1000.0))
    AND ($7::bigint = 0 OR created_at <= to_timestamp($7::bigint / 1000.0))
    AND ($8 = '' OR worker = $8)
    AND ($9 = '' OR proxy_query_id = $9 OR backend_query_id = $9)
    AND ($10 = '' OR source = $10) AND ($11 = '' OR external_url = $11))";

query_record record_of(const pqxx::row& row) {
  query_record r;
  r.proxy_query_id = row[0].as<std::string>();
  r.user = row[1].as<std::string>();
  r.source = row[2].as<std::string>();
  r.catalog = row[3].as<std::string>();
  r.schema = row[4].as<std::string>();
  r.cluster_group = row[5].as<std::string>();
  r.cluster_name = row[6].as<std::string>();
  r.engine_type = row[7].as<std::string>();
  r.protocol = row[8].as<std::string>();
  r.sql = row[9].as<std::string>();
  r.status = row[10].as<std::string>();
  r.error_message = row[11].as<std::string>();
  r.routing_trace = row[12].as<std::string>();
  r.created_at_ms = row[13].as<int64_t>();
  r.started_at_ms = row[14].as<int64_t>();
  r.finished_at_ms = row[15].as<int64_t>();
  r.queue_duration_ms = row[16].as<int64_t>();
  r.execution_duration_ms = row[17].as<int64_t>();
  r.rows_returned = row[18].as<int64_t>();
  r.worker = row[19].as<std::string>();
  r.query_hash = row[20].as<int64_t>();
  r.query_parameterized_hash = row[21].as<int64_t>();
  r.backend_query_id = row[22].as<std::string>();
  r.external_url = row[23].as<std::string>();
  return r;
}

} // namespace

struct history_table::session {
  explicit session(const std::string& url) : conn(url) {
    pqxx::nontransaction tx{conn};
    tx.exec(batch_table_ddl);
    tx.commit();
  }

  pqxx::connection conn;
};

history_table::history_table(std::string url) : url_(with_timeouts(url)) {
  // Connecting waits for the server: it happens on the first write.
}

history_table::~history_table() = default;

history_table::session& history_table::connected() {
  if (!session_ || !session_->conn.is_open())
    session_ = std::make_unique<session>(url_);
  return *session_;
}

/// Runs f(transaction) and commits; a failure drops the connection so the
/// next call starts afresh, and goes to the caller.
template <class F>
auto history_table::in_transaction(F f) {
  try {
    pqxx::work tx{connected().conn};
    auto out = f(tx);
    tx.commit();
    return out;
  } catch (...) {
    session_.reset();
    throw;
  }
}

size_t history_table::write(const std::vector<query_record>& batch) {
  // Nearly every batch is new: COPY it straight into query_records, as
  // fast as anything can write it. One that holds a stored id (a worker's
  // retry, a record filed twice) fails on the unique index as a whole and
  // goes again through the batch table, where the first record per id wins.
  try {
    pqxx::work tx{connected().conn};
    copy_rows(tx, "query_records", direct_columns, batch, timestamps::as_text);
    tx.commit();
    return batch.size();
  } catch (const pqxx::unique_violation&) {
    // rolled back; the connection is fine
  } catch (...) {
    session_.reset();
    throw;
  }
  return in_transaction([&](pqxx::work& tx) {
    copy_rows(tx, "history_batch", batch_columns, batch, timestamps::as_ms);
    return static_cast<size_t>(tx.exec(insert_from_batch).affected_rows());
  });
}

size_t history_table::purge_older_than(uint32_t days) {
  return in_transaction([&](pqxx::work& tx) {
    return static_cast<size_t>(
      tx.exec_params("DELETE FROM query_records WHERE created_at < now() - make_interval(days => $1)",
                     static_cast<int>(days))
        .affected_rows());
  });
}

std::string history_table::list(const history_filter& f) {
  return in_transaction([&](pqxx::work& tx) {
    auto total = tx.exec_params(std::string{"SELECT count(*) FROM query_records"} + filter_clause,
                                f.search, f.user, f.cluster_group, f.cluster_name,
                                f.status, f.from_ms, f.to_ms, f.worker, f.query_id, f.source,
                                f.external_url)[0][0]
                   .as<size_t>();
    auto rows = tx.exec_params(std::string{"SELECT "} + record_columns
                                 + " FROM query_records" + filter_clause
                                 + " ORDER BY created_at DESC, id DESC LIMIT $12::bigint OFFSET $13::bigint",
                               f.search, f.user, f.cluster_group, f.cluster_name, f.status,
                               f.from_ms, f.to_ms, f.worker, f.query_id, f.source, f.external_url,
                               static_cast<int64_t>(f.limit),
                               static_cast<int64_t>(f.offset));
    std::string out = "{\"total\":" + std::to_string(total) + ",\"queries\":[";
    for (size_t i = 0; i < rows.size(); ++i) {
      if (i > 0)
        out += ',';
      out += to_json(record_of(rows[i]));
    }
    return out + "]}";
  });
}

std::optional<std::string> history_table::get(const std::string& proxy_query_id) {
  return in_transaction([&](pqxx::work& tx) -> std::optional<std::string> {
    auto rows = tx.exec_params(std::string{"SELECT "} + record_columns
                                 + " FROM query_records WHERE proxy_query_id = $1",
                               proxy_query_id);
    if (rows.empty())
      return std::nullopt;
    return to_json(record_of(rows[0]));
  });
}

void history_table::count(query_buckets& b) {
  in_transaction([&](pqxx::work& tx) {
    auto n = static_cast<int64_t>(b.queries.size());
    // On created_at's index: the last hour of a large table.
    auto rows = tx.exec_params(R"(
      SELECT floor((extract(epoch FROM created_at) * 1000 - $1::bigint) / $2::bigint)::bigint,
             count(*), count(*) FILTER (WHERE status IN ('Failed', 'Denied'))
      FROM query_records
      WHERE created_at >= to_timestamp($1::bigint / 1000.0)
        AND created_at < to_timestamp(($1::bigint + $2::bigint * $3::bigint) / 1000.0)
      GROUP BY 1)",
                               b.from_ms, b.bucket_ms, n);
    for (const auto& row : rows) {
      auto i = row[0].as<int64_t>();
      if (i < 0 || i >= n)
        continue;
      b.queries[static_cast<size_t>(i)] = row[1].as<uint64_t>();
      b.errors[static_cast<size_t>(i)] = row[2].as<uint64_t>();
    }
    return 0;
  });
}

} // namespace qf
