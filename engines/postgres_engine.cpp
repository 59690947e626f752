// PostgreSQL clusters through libpq. libpqxx 6.4 cannot stream the rows of
// an arbitrary query; libpq's single-row mode can, so a million-row result
// never sits whole in memory. Sessions run in UTC so that timestamptz
// values arrive in the canonical form the frontends expect.
#include "engines/postgres_engine.hpp"

#include "engines/postgres_results.hpp"

#include <libpq-fe.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <utility>

namespace qf::engines {

namespace {

class pg_cursor : public cursor {
public:
  /// first: the statement's first result, already fetched.
  pg_cursor(PGconn* conn, PGresult* first) : conn_(conn), pending_(first) {
    columns_ = columns_of(first);
    if (PQresultStatus(first) == PGRES_COMMAND_OK) {
      auto* tuples = PQcmdTuples(first);
      affected_ = tuples && *tuples ? std::atoll(tuples) : -1;
    }
  }

  ~pg_cursor() override {
    if (pending_)
      PQclear(pending_);
    if (!done_) {
      // Rows nobody will read: stop the statement, then drain its results
      // so the connection is ready for the next one.
      if (auto* cancel = PQgetCancel(conn_)) {
        char buf[256];
        PQcancel(cancel, buf, sizeof(buf));
        PQfreeCancel(cancel);
      }
    }
    while (auto* res = PQgetResult(conn_))
      PQclear(res);
  }

  bool fetch(row_batch& out, size_t max_rows) override {
    out.width = columns_.size();
    size_t taken = 0;
    while (!done_ && taken < max_rows) {
      auto* res = pending_ ? std::exchange(pending_, nullptr)
                           : PQgetResult(conn_);
      if (!res) {
        done_ = true;
        break;
      }
      switch (PQresultStatus(res)) {
        case PGRES_SINGLE_TUPLE:
          append_row(out, columns_, res, 0);
          ++taken;
          break;
        case PGRES_TUPLES_OK:
        case PGRES_COMMAND_OK:
          break; // the end of the rows; a NULL result follows
        default: {
          auto err = result_error(res);
          PQclear(res);
          while (auto* rest = PQgetResult(conn_))
            PQclear(rest);
          done_ = true;
          throw err;
        }
      }
      PQclear(res);
    }
    return !done_;
  }

private:
  PGconn* conn_;
  PGresult* pending_;
  bool done_ = false;
};

class pg_connection : public connection {
public:
  explicit pg_connection(std::string conninfo)
    : conninfo_(std::move(conninfo)) {
    // Connecting waits for the server: it happens on the first execute, on
    // the connection actor's own thread.
  }

  ~pg_connection() override {
    {
      std::lock_guard guard{cancel_mtx_};
      if (cancel_)
        PQfreeCancel(cancel_);
      cancel_ = nullptr;
    }
    if (conn_)
      PQfinish(conn_);
  }

  pg_connection(const pg_connection&) = delete;
  pg_connection& operator=(const pg_connection&) = delete;

  /// Statements running in the cluster's database, every client's but
  /// this health check's own.
  std::optional<uint32_t> running_count() override {
    return count_of("SELECT count(*) FROM pg_stat_activity WHERE state = 'active'"
                    " AND backend_type = 'client backend' AND datname = current_database()"
                    " AND pid <> pg_backend_pid()");
  }

  using connection::execute;

  std::unique_ptr<cursor> execute(const std::string& sql,
                                  const parameters& params) override {
    ensure_connected();
    notices_.clear(); // a failed statement's: not for the next, maybe another client's
    while (auto* n = PQnotifies(conn_)) // a LISTEN's, for nobody: not kept without bound
      PQfreemem(n);
    std::vector<const char*> values;
    values.reserve(params.size());
    for (const auto& p : params)
      values.push_back(p ? p->c_str() : nullptr);
    if (!PQsendQueryParams(conn_, sql.c_str(), static_cast<int>(values.size()),
                           nullptr, values.data(), nullptr, nullptr, 0))
      throw lost(pq_message(PQerrorMessage(conn_)));
    PQsetSingleRowMode(conn_);
    auto* first = PQgetResult(conn_);
    if (!first)
      throw engine_error(error_kind::syntax, "empty query");
    auto status = PQresultStatus(first);
    if (status == PGRES_FATAL_ERROR || status == PGRES_BAD_RESPONSE) {
      auto err = result_error(first);
      PQclear(first);
      while (auto* rest = PQgetResult(conn_))
        PQclear(rest);
      throw err;
    }
    if (status == PGRES_COPY_IN || status == PGRES_COPY_OUT || status == PGRES_COPY_BOTH) {
      // Leaving a copy cleanly would take the server's data or ours: the
      // connection is closed instead, and the next execute reconnects.
      PQclear(first);
      lost("COPY");
      throw engine_error(error_kind::user, "COPY is supported only from PostgreSQL wire clients",
                         "0A000");
    }
    if (status == PGRES_EMPTY_QUERY) {
      PQclear(first);
      PQgetResult(conn_);
      throw engine_error(error_kind::syntax, "empty query");
    }
    return std::make_unique<pg_cursor>(conn_, first);
  }

  bool in_transaction() const override {
    return conn_ && PQtransactionStatus(conn_) != PQTRANS_IDLE;
  }

  void renew_session() override {
    if (conn_)
      PQfinish(conn_); // the next execute connects anew
    conn_ = nullptr;
  }

  std::vector<notice> take_notices() override {
    return std::exchange(notices_, {});
  }

  void interrupt() override {
    std::lock_guard guard{cancel_mtx_};
    if (cancel_) {
      char buf[256];
      PQcancel(cancel_, buf, sizeof(buf));
    }
  }

private:
  engine_error lost(const std::string& why) {
    // The next execute reconnects.
    PQfinish(conn_);
    conn_ = nullptr;
    return engine_error(error_kind::internal, why);
  }

  void ensure_connected() {
    if (conn_ && PQstatus(conn_) == CONNECTION_OK)
      return;
    if (conn_)
      PQfinish(conn_);
    pq_connect_params params{conninfo_};
    conn_ = PQconnectdbParams(params.keys, params.values, /*expand_dbname=*/1);
    if (PQstatus(conn_) != CONNECTION_OK) {
      auto why = pq_message(PQerrorMessage(conn_));
      PQfinish(conn_);
      conn_ = nullptr;
      throw engine_error(error_kind::internal,
                         "cannot connect to PostgreSQL: " + why);
    }
    PQsetNoticeReceiver(conn_, &pg_connection::receive_notice, this);
    std::lock_guard guard{cancel_mtx_};
    if (cancel_)
      PQfreeCancel(cancel_);
    cancel_ = PQgetCancel(conn_);
  }

  /// libpq's notice receiver: kept for the statement's client (never
  /// printed on our stderr, libpq's default), up to a bound, so that a
  /// loop raising notices cannot fill our memory.
  static void receive_notice(void* arg, const PGresult* res) {
    auto& notices = static_cast<pg_connection*>(arg)->notices_;
    if (notices.size() < max_notices_per_statement)
      notices.push_back(notice_of(res));
  }

  std::string conninfo_;
  PGconn* conn_ = nullptr;
  std::vector<notice> notices_; // since take_notices()
  std::mutex cancel_mtx_;
  PGcancel* cancel_ = nullptr;
};

class pg_database : public database {
public:
  explicit pg_database(std::string conninfo) : conninfo_(std::move(conninfo)) {
    // nop
  }

  std::unique_ptr<connection> connect() override {
    return std::make_unique<pg_connection>(conninfo_);
  }

  std::string_view engine_type() const override {
    return "postgres";
  }

private:
  std::string conninfo_;
};

/// A libpq keyword=value string, quoted as libpq wants.
std::string keyword(const char* key, const std::string& value) {
  std::string out = std::string{key} + "='";
  for (char c : value) {
    if (c == '\'' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "' ";
}

} // namespace

std::string postgres_conninfo(const config::cluster& cfg) {
  if (!cfg.endpoint.empty())
    return cfg.endpoint; // libpq reads postgres:// URLs itself
  std::string out = keyword("host", cfg.host);
  if (cfg.port != 0)
    out += keyword("port", std::to_string(cfg.port));
  if (!cfg.database.empty())
    out += keyword("dbname", cfg.database);
  if (!cfg.user.empty())
    out += keyword("user", cfg.user);
  if (!cfg.password.empty())
    out += keyword("password", cfg.password);
  return out;
}

std::shared_ptr<database> open_postgres(const config::cluster& cfg) {
  return std::make_shared<pg_database>(postgres_conninfo(cfg));
}

} // namespace qf::engines
