// The engine interface: one `database` per cluster, blocking `connection`s
// opened from it, and `cursor`s that stream a statement's rows in batches.
// Everything here blocks; only detached actors call it.
#pragma once

#include "engines/engine_load.hpp"
#include "protocols/common/rows.hpp"
#include "protocols/config/model.hpp"

#include <chrono>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>

namespace qf::engines {

/// How long connecting to a cluster's server may take, on every path:
/// libpq's and MariaDB's connect_timeout, and the fast lane's own timers.
constexpr std::chrono::seconds connect_timeout{10};

enum class error_kind { syntax, user, cancelled, internal };

/// What an engine throws; the message is safe to show to the client.
class engine_error : public std::runtime_error {
public:
  engine_error(error_kind kind, const std::string& what,
               std::string sqlstate = {}, int32_t vendor_code = 0)
    : std::runtime_error(what),
      kind_(kind),
      sqlstate_(std::move(sqlstate)),
      vendor_code_(vendor_code) {
    // nop
  }

  error_kind kind() const {
    return kind_;
  }

  /// The backend's SQLSTATE when it has one (PostgreSQL, MySQL), else "".
  const std::string& sqlstate() const {
    return sqlstate_;
  }

  /// The backend's own error number (MySQL's 1146...), else 0.
  int32_t vendor_code() const {
    return vendor_code_;
  }

private:
  error_kind kind_;
  std::string sqlstate_;
  int32_t vendor_code_;
};

/// One statement's result. Engines fill in the columns and the affected
/// rows when the statement starts, and stream the rows through fetch().
class cursor {
public:
  virtual ~cursor() = default;

  cursor(const cursor&) = delete;
  cursor& operator=(const cursor&) = delete;

  const std::vector<column>& columns() const {
    return columns_;
  }

  /// Appends up to max_rows rows to out; returns false once exhausted.
  virtual bool fetch(row_batch& out, size_t max_rows) = 0;

  /// Rows changed by a statement that returns none (INSERT, UPDATE...),
  /// or -1 when unknown.
  int64_t affected_rows() const {
    return affected_;
  }

  /// The engine's own id of the statement where it has one (Trino's query
  /// id), for links to the engine's UI; empty otherwise.
  const std::string& backend_query_id() const {
    return backend_id_;
  }

protected:
  cursor() = default;

  std::vector<column> columns_;
  int64_t affected_ = -1;
  std::string backend_id_;
};

/// Values for $1, $2, ... in their text form; nullopt is NULL.
using parameters = std::vector<std::optional<std::string>>;

/// Who runs the statements, for engines that pass it on (Trino: the user
/// and the client's other X-Trino-* headers).
struct session_context {
  std::string user;
  /// Lowercased names.
  std::vector<std::pair<std::string, std::string>> headers;
};

/// What a server says beside a result: PostgreSQL's NOTICE, WARNING,
/// INFO (RAISE NOTICE, "table does not exist, skipping").
struct notice {
  std::string severity;
  std::string sqlstate;
  std::string message;
};

/// The notices kept for a statement's client at most: a loop raising them
/// must not fill our memory (the rest are dropped).
constexpr size_t max_notices_per_statement = 1000;

class connection {
public:
  virtual ~connection() = default;

  /// Runs one statement (or several, streaming the last one's rows).
  /// Parameters bind to the placeholders of the last statement.
  virtual std::unique_ptr<cursor> execute(const std::string& sql,
                                          const parameters& params)
    = 0;

  std::unique_ptr<cursor> execute(const std::string& sql) {
    return execute(sql, {});
  }

  /// execute() for whichever client the connection serves now (a
  /// connection actor serves one statement after another, anyone's): state
  /// the last client left in the session (sql::leaves_session_state, or a
  /// SET, USE or RESET: a temporary table, search_path) goes with a fresh
  /// session first, once no transaction holds it.
  std::unique_ptr<cursor> run(const std::string& sql, const parameters& params);

  /// Stops the running statement. Safe to call from any thread.
  virtual void interrupt() = 0;

  /// The notices the server sent since the last call, oldest first.
  virtual std::vector<notice> take_notices() {
    return {};
  }

  /// Who runs the next statements; engines without sessions ignore it.
  virtual void set_session(const session_context&) {
    // nop
  }

  /// A health check: runs the query and reads its rows. Engines with a
  /// cheaper probe of their own (Trino: /v1/info) use that instead.
  virtual void probe(const std::string& health_check_query);

  /// One health check as `how` says (Trino Gateway's monitor types);
  /// throws engine_error when the cluster is not healthy. Returns what the
  /// cluster runs and queues when it was read: with `count`, or by a
  /// monitor that reads it anyway (JDBC, JMX, METRICS). Here: INFO_API
  /// runs the health query, JDBC the same and always counts, NOOP nothing;
  /// JMX and METRICS read Trino's endpoints (the loader keeps a cluster's
  /// own to trino clusters; the global one leaves others to INFO_API).
  virtual std::optional<engine_load> check(const config::health_probe& how,
                                           const std::string& health_check_query, bool count);

  /// The queries the cluster runs or queues now, every client's (Trino's
  /// /v1/query, PostgreSQL's pg_stat_activity, MySQL's processlist), which
  /// leastLoaded weighs; nullopt when the engine does not say (the
  /// embedded ones: a node's own count is all there is).
  virtual std::optional<uint32_t> running_count() {
    return std::nullopt;
  }

protected:
  /// The first cell of `sql`'s first row as a count; nullopt when it is
  /// not one or the statement fails (a count is only advice).
  std::optional<uint32_t> count_of(const std::string& sql);

  /// Whether the session holds an open transaction now.
  virtual bool in_transaction() const {
    return false;
  }
  /// Replaces the session with a fresh one (or drops it for the next
  /// execute() to open).
  virtual void renew_session() {
    // nop: engines without sessions
  }

private:
  bool left_state_ = false; // the last client left state in the session
};

class database {
public:
  virtual ~database() = default;

  virtual std::unique_ptr<connection> connect() = 0;

  virtual std::string_view engine_type() const = 0;
};

/// Opens the cluster's database and runs its initSql once.
/// Throws engine_error when the database cannot be opened.
std::shared_ptr<database> open_database(const config::cluster& cfg);

} // namespace qf::engines
