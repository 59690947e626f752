// MySQL and MariaDB clusters through MariaDB Connector/C. Rows stream with
// mysql_use_result, so a million-row result never sits whole in memory.
// Parameters arrive as $n and are spliced in as escaped literals: the text
// protocol streams, and every engine takes the same placeholders. Sessions
// run in UTC so that TIMESTAMP values arrive in canonical form.
#include "engines/mysql_engine.hpp"

#include "engines/mysql_client.hpp"
#include "protocols/common/hex.hpp"

#include <atomic>
#include <functional>
#include <mutex>

namespace qf::engines {

namespace {

class mysql_cursor : public cursor {
public:
  mysql_cursor(MYSQL* conn, MYSQL_RES* res, std::function<void()> kill)
    : conn_(conn), res_(res), kill_(std::move(kill)) {
    if (!res_) {
      affected_ = static_cast<int64_t>(mysql_affected_rows(conn_));
      done_ = true;
      if (!mysql_skip_further_results(conn_))
        throw mysql_failure(conn_);
      return;
    }
    auto n = mysql_num_fields(res_);
    auto* fields = mysql_fetch_fields(res_);
    for (unsigned i = 0; i < n; ++i)
      columns_.push_back({fields[i].name, mysql_column_type(fields[i])});
  }

  ~mysql_cursor() override {
    if (!res_)
      return;
    // Rows nobody will read: stop the statement rather than read them all.
    if (!done_)
      kill_();
    mysql_free_result(res_);
    if (!done_)
      mysql_skip_further_results(conn_); // killed: their errors are for nobody
  }

  bool fetch(row_batch& out, size_t max_rows) override {
    out.width = columns_.size();
    for (size_t taken = 0; !done_ && taken < max_rows; ++taken) {
      auto row = mysql_fetch_row(res_);
      if (!row) {
        done_ = true;
        // The actor path passes a statement's first result on, and drops a
        // CALL's others.
        if (mysql_errno(conn_) != 0 || !mysql_skip_further_results(conn_))
          throw mysql_failure(conn_);
        break;
      }
      auto* lengths = mysql_fetch_lengths(res_);
      for (size_t c = 0; c < columns_.size(); ++c) {
        if (row[c])
          out.cells.emplace_back(std::string{row[c], lengths[c]});
        else
          out.cells.emplace_back();
      }
    }
    return !done_;
  }

private:
  MYSQL* conn_;
  MYSQL_RES* res_;
  std::function<void()> kill_;
  bool done_ = false;
};

class mysql_connection : public connection {
public:
  explicit mysql_connection(mysql_target target) : target_(std::move(target)) {
    // Connecting waits for the server: it happens on the first execute, on
    // the connection actor's own thread.
  }

  ~mysql_connection() override {
    if (conn_)
      mysql_close(conn_);
  }

  mysql_connection(const mysql_connection&) = delete;
  mysql_connection& operator=(const mysql_connection&) = delete;

  /// Statements the server runs (those its processlist shows this user:
  /// every client's with the PROCESS privilege), but this one.
  std::optional<uint32_t> running_count() override {
    return count_of("SELECT COUNT(*) FROM information_schema.PROCESSLIST"
                    " WHERE COMMAND = 'Query' AND ID <> CONNECTION_ID()");
  }

  using connection::execute;

  std::unique_ptr<cursor> execute(const std::string& sql,
                                  const parameters& params) override {
    ensure_connected();
    auto text = params.empty() ? sql : mysql_with_literals(conn_, sql, params);
    if (mysql_real_query(conn_, text.data(), text.size()) != 0)
      throw failure();
    auto* res = mysql_use_result(conn_);
    if (!res && mysql_field_count(conn_) != 0)
      throw failure();
    return std::make_unique<mysql_cursor>(conn_, res, [this] { interrupt(); });
  }

  bool in_transaction() const override {
    return conn_ && (conn_->server_status & SERVER_STATUS_IN_TRANS) != 0;
  }

  void renew_session() override {
    if (conn_)
      mysql_close(conn_); // the next execute connects anew
    conn_ = nullptr;
  }

  /// KILL QUERY from a second connection: the server's way to stop a
  /// statement, since its protocol has no out-of-band cancel.
  void interrupt() override {
    auto id = thread_id_.load();
    if (id == 0)
      return;
    mysql_kill_query(target_, id);
  }

private:
  engine_error failure() {
    auto err = mysql_failure(conn_);
    if (err.kind() == error_kind::internal) {
      // The connection is gone; the next execute reconnects.
      mysql_close(conn_);
      conn_ = nullptr;
      thread_id_ = 0;
    }
    return err;
  }

  void ensure_connected() {
    if (conn_)
      return;
    std::string why;
    conn_ = mysql_connect_blocking(target_, why);
    if (!conn_)
      throw engine_error(error_kind::internal, "cannot connect to MySQL: " + why);
    thread_id_ = mysql_thread_id(conn_);
  }

  mysql_target target_;
  MYSQL* conn_ = nullptr;
  std::atomic<unsigned long> thread_id_{0};
};

class mysql_database : public database {
public:
  explicit mysql_database(mysql_target target) : target_(std::move(target)) {
    // nop
  }

  std::unique_ptr<connection> connect() override {
    return std::make_unique<mysql_connection>(target_);
  }

  std::string_view engine_type() const override {
    return "mysql";
  }

private:
  mysql_target target_;
};

std::string url_decode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex_digit_value(s[i + 1]) >= 0
        && hex_digit_value(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_digit_value(s[i + 1]) * 16
                               + hex_digit_value(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

} // namespace

std::optional<mysql_target> parse_mysql_url(std::string_view url) {
  constexpr std::string_view scheme = "mysql://";
  if (url.substr(0, scheme.size()) != scheme)
    return std::nullopt;
  auto rest = url.substr(scheme.size());
  rest = rest.substr(0, rest.find('?'));
  mysql_target out;
  if (auto slash = rest.find('/'); slash != std::string_view::npos) {
    out.database = url_decode(rest.substr(slash + 1));
    rest = rest.substr(0, slash);
  }
  if (auto at = rest.rfind('@'); at != std::string_view::npos) {
    auto userinfo = rest.substr(0, at);
    rest = rest.substr(at + 1);
    auto colon = userinfo.find(':');
    out.user = url_decode(userinfo.substr(0, colon));
    if (colon != std::string_view::npos)
      out.password = url_decode(userinfo.substr(colon + 1));
  }
  if (auto colon = rest.rfind(':'); colon != std::string_view::npos) {
    unsigned port = 0;
    for (char c : rest.substr(colon + 1)) {
      if (c < '0' || c > '9' || (port = port * 10 + static_cast<unsigned>(c - '0')) > 65535)
        return std::nullopt;
    }
    out.port = port;
    rest = rest.substr(0, colon);
  }
  if (rest.empty())
    return std::nullopt;
  out.host = std::string{rest};
  return out;
}

mysql_target mysql_target_of(const config::cluster& cfg) {
  mysql_target target;
  if (!cfg.endpoint.empty()) {
    auto parsed = parse_mysql_url(cfg.endpoint);
    if (!parsed)
      throw engine_error(error_kind::internal, "not a mysql:// URL: " + cfg.endpoint);
    target = *parsed;
  } else {
    target = {cfg.host, cfg.port, cfg.database, cfg.user, cfg.password};
  }
  if (target.port == 0)
    target.port = 3306;
  return target;
}

std::shared_ptr<database> open_mysql(const config::cluster& cfg) {
  return std::make_shared<mysql_database>(mysql_target_of(cfg));
}

} // namespace qf::engines
