// PostgreSQL clusters through libpq. libpqxx 6.4 cannot stream the rows of
// an arbitrary query; libpq's single-row mode can, so a million-row result
// never sits whole in memory. Sessions run in UTC so that timestamptz
// values arrive in the canonical form the frontends expect.
#include "engines/postgres_engine.hpp"

#include "protocols/common/hex.hpp"

#include <libpq-fe.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <utility>

namespace qf::engines {

namespace {

/// libpq's own error text, trimmed of its trailing newline.
std::string pq_message(const char* text) {
  std::string s = text ? text : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
    s.pop_back();
  return s;
}

error_kind classify(const char* sqlstate) {
  std::string_view code = sqlstate ? sqlstate : "";
  if (code == "57014")
    return error_kind::cancelled;
  if (code == "42601")
    return error_kind::syntax;
  if (code.empty() || code.substr(0, 2) == "08" || code.substr(0, 2) == "XX"
      || code.substr(0, 2) == "53" || code.substr(0, 2) == "57")
    return error_kind::internal;
  return error_kind::user;
}

engine_error result_error(PGresult* res) {
  auto* state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
  // The primary message alone: frontends add their own "ERROR:" framing.
  auto* primary = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
  return engine_error(classify(state),
                      pq_message(primary ? primary : PQresultErrorMessage(res)),
                      state ? state : "");
}

sql_type map_type(Oid oid, int mod) {
  switch (oid) {
    case 16:
      return {type_id::boolean};
    case 21:
      return {type_id::smallint};
    case 23:
      return {type_id::integer};
    case 20:
      return {type_id::bigint};
    case 700:
      return {type_id::real};
    case 701:
      return {type_id::double_precision};
    case 1700:
      if (mod >= 4) {
        auto m = mod - 4;
        return {type_id::decimal, static_cast<uint8_t>((m >> 16) & 0xFFFF),
                static_cast<uint8_t>(m & 0xFFFF)};
      }
      return {type_id::decimal, 0, 0}; // unconstrained numeric
    case 17:
      return {type_id::varbinary};
    case 1082:
      return {type_id::date};
    case 1083:
      return {type_id::time, static_cast<uint8_t>(mod >= 0 ? mod : 6)};
    case 1114:
      return {type_id::timestamp, static_cast<uint8_t>(mod >= 0 ? mod : 6)};
    case 1184:
      return {type_id::timestamp_tz, static_cast<uint8_t>(mod >= 0 ? mod : 6)};
    case 2950:
      return {type_id::uuid};
    case 114:
    case 3802:
      return {type_id::json};
    case 1186:
      return {type_id::interval};
    default:
      return {type_id::varchar}; // text, varchar, name, and the rest as text
  }
}


/// PostgreSQL's text output, turned into our canonical cell text.
std::string canonical(type_id t, const char* value, int length) {
  std::string_view v{value, static_cast<size_t>(length)};
  switch (t) {
    case type_id::boolean:
      return v == "t" ? "true" : "false";
    case type_id::varbinary: {
      if (v.substr(0, 2) != "\\x")
        return std::string{v};
      std::string out;
      out.reserve((v.size() - 2) / 2);
      for (size_t i = 2; i + 1 < v.size(); i += 2)
        out += static_cast<char>(hex_digit_value(v[i]) * 16 + hex_digit_value(v[i + 1]));
      return out;
    }
    case type_id::timestamp_tz:
      // The session runs in UTC: drop the "+00" PostgreSQL appends.
      if (v.size() > 3 && v.substr(v.size() - 3) == "+00")
        v.remove_suffix(3);
      return std::string{v};
    default:
      return std::string{v};
  }
}

class pg_cursor : public cursor {
public:
  /// first: the statement's first result, already fetched.
  pg_cursor(PGconn* conn, PGresult* first) : conn_(conn), pending_(first) {
    auto n = PQnfields(first);
    for (int i = 0; i < n; ++i)
      columns_.push_back({PQfname(first, i),
                          map_type(PQftype(first, i), PQfmod(first, i))});
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
          append(out, res);
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
  void append(row_batch& out, PGresult* res) {
    for (int c = 0; c < static_cast<int>(columns_.size()); ++c) {
      if (PQgetisnull(res, 0, c))
        out.cells.emplace_back();
      else
        out.cells.emplace_back(canonical(columns_[static_cast<size_t>(c)].type.id,
                                         PQgetvalue(res, 0, c),
                                         PQgetlength(res, 0, c)));
    }
  }

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

  using connection::execute;

  std::unique_ptr<cursor> execute(const std::string& sql,
                                  const parameters& params) override {
    ensure_connected();
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
    if (status == PGRES_EMPTY_QUERY) {
      PQclear(first);
      PQgetResult(conn_);
      throw engine_error(error_kind::syntax, "empty query");
    }
    return std::make_unique<pg_cursor>(conn_, first);
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
    const char* keys[] = {"dbname", "options", "application_name",
                          "connect_timeout", nullptr};
    const char* values[] = {conninfo_.c_str(), "-c TimeZone=UTC", "queryflux",
                            "10", nullptr};
    conn_ = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
    if (PQstatus(conn_) != CONNECTION_OK) {
      auto why = pq_message(PQerrorMessage(conn_));
      PQfinish(conn_);
      conn_ = nullptr;
      throw engine_error(error_kind::internal,
                         "cannot connect to PostgreSQL: " + why);
    }
    std::lock_guard guard{cancel_mtx_};
    if (cancel_)
      PQfreeCancel(cancel_);
    cancel_ = PQgetCancel(conn_);
  }

  std::string conninfo_;
  PGconn* conn_ = nullptr;
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
