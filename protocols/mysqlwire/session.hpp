// The server side of one MySQL connection as a state machine: greeting,
// login, then commands. Bytes in, bytes and events out; the driver runs the
// statements and reports back. Pure: no sockets, no engine, no clock.
#pragma once

#include "protocols/common/rows.hpp"
#include "protocols/common/sans_io.hpp"
#include "protocols/mysqlwire/binary.hpp"
#include "protocols/mysqlwire/packets.hpp"
#include "protocols/sql/placeholders.hpp"
#include "protocols/sql/transactions.hpp"

#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace qf::mysqlwire {

struct session_options {
  uint32_t connection_id = 0;
  std::string scramble; // 20 random bytes, none of them NUL
  size_t max_message = 16 * 1024 * 1024;
  std::string server_version = "8.0.34-QueryFlux";
  bool tls_available = false; // offer CLIENT_SSL in the greeting
  /// What one connection may keep in prepared statements' SQL: a client
  /// that leaks them gets 1461 instead of growing the gateway's memory.
  size_t max_prepared_bytes = 64 * 1024 * 1024;
  /// Whether a SET of the server's session variables, or a SELECT of them
  /// (this statement), goes to the engine rather than being answered here:
  /// the engine has them and gives the client's to the connection its
  /// statements run on (a MariaDB cluster on the fast lane). autocommit and
  /// the character set stay the gateway's. Unset: answered here.
  std::function<bool(std::string_view statement)> settings_on_server{};
};

/// The client logged in, or logged in anew (COM_CHANGE_USER): the driver
/// checks the token against the scramble and calls accept() or reject().
struct login_event {
  std::string user;
  std::string auth_response;
  std::string database;
  /// The client asked for CLIENT_IGNORE_SPACE: MySQL adds IGNORE_SPACE to
  /// its session's sql_mode (`COUNT (*)` parses then).
  bool ignore_space = false;
};

/// Run one statement; the driver reports with columns(), rows(),
/// complete() or fail(). A prepared statement's placeholders arrive as
/// $1, $2... with their values in `params`.
struct query_event {
  std::string sql;
  std::vector<std::optional<std::string>> params;
  sql::transaction_step step = sql::transaction_step::none;
  /// Each parameter's kind, as its client's type said (prepared statements).
  std::vector<sql::literal_kind> kinds{};
  /// To run first on the statement's connection: a SET TRANSACTION the
  /// client sent for its next transaction, which this statement starts.
  std::string prelude{};
  /// A SELECT SQL_CALC_FOUND_ROWS: the driver reads FOUND_ROWS() on its
  /// connection after it (found_rows()), before another client's statement.
  bool counts_found_rows = false;
  /// LAST_INSERT_ID(expr) in a SELECT or DO set its connection's: the
  /// driver reads it there after it (last_insert_id()) as well.
  bool sets_last_insert_id = false;
};

/// KILL [QUERY | CONNECTION] id: the driver stops that connection's query
/// (and closes it, unless query_only), then calls complete() or fail().
struct kill_event {
  uint32_t connection_id = 0;
  bool query_only = false;
};

/// The client asked for TLS: send the output, run the handshake, then call
/// tls_started(). The login continues inside TLS.
struct tls_event {
  /// The handshake's first bytes, if they came with the request: a MySQL
  /// client does not wait for an answer before its ClientHello.
  std::string received;
};

using session_event
  = std::variant<login_event, query_event, kill_event, tls_event>;

/// What the server said of a statement without rows, for its OK packet.
struct command_result {
  int64_t affected_rows = -1;
  uint64_t insert_id = 0; // AUTO_INCREMENT's, or LAST_INSERT_ID(expr)'s
  uint16_t warnings = 0;
  std::string info{}; // "Rows matched: 1  Changed: 0  Warnings: 0"
};

/// A row of SHOW WARNINGS: 'Note', 'Warning' or 'Error', its code, its text.
struct diagnostic {
  std::string level;
  uint32_t code = 0;
  std::string message;
};

/// A MySQL error: code, SQLSTATE and message.
struct error_info {
  uint16_t code = 1105; // ER_UNKNOWN_ERROR
  std::string sqlstate = "HY000";
  std::string message;
};

class server_session : public sans_io_session<session_event> {
public:
  explicit server_session(session_options opts);

  void feed(std::string_view bytes);

  bool closing() const {
    return state_ == state::closing;
  }

  const std::string& database() const {
    return database_;
  }

  /// How many times the client reset its session (COM_RESET_CONNECTION,
  /// COM_CHANGE_USER): a backend connection kept for its session state
  /// goes then.
  uint64_t session_resets() const {
    return resets_;
  }

  // -- driver reports ---------------------------------------------------------

  void tls_started();
  bool tls_active() const {
    return tls_;
  }

  void accept();
  void reject(const error_info& e);
  /// fields: the columns as the server described them (a MariaDB
  /// cluster's), passed on whole instead of built from cols.
  void columns(const std::vector<column>& cols, std::vector<server_field> fields = {});
  void rows(const row_batch& batch);
  /// One result of the statement ended and another follows (a CALL's
  /// result sets, then its status): it ends flagged
  /// SERVER_MORE_RESULTS_EXISTS; columns() opens the next with rows.
  void result_ends(int64_t affected_rows);
  void complete(int64_t affected_rows) {
    complete(command_result{affected_rows});
  }
  /// Before complete(): what FOUND_ROWS() said on the statement's
  /// connection right after a SQL_CALC_FOUND_ROWS statement.
  void found_rows(uint64_t n) {
    calculated_found_rows_ = n;
  }
  /// Before complete(): what LAST_INSERT_ID() said on the statement's
  /// connection right after a statement that set it by LAST_INSERT_ID(expr).
  void last_insert_id(uint64_t n) {
    last_insert_id_ = n;
  }
  /// Before complete(): the warnings the server listed for the statement
  /// on its connection, right after it ran; SHOW WARNINGS tells them
  /// until the client's next statement.
  void warnings(std::vector<diagnostic> list) {
    diagnostics_ = std::move(list);
  }
  /// With what the server said of it: the insert id, the warnings, the
  /// summary (matched rows where the client asked for CLIENT_FOUND_ROWS).
  void complete(const command_result& result);
  void fail(const error_info& e);
  /// Before complete() or fail(), where the driver read the server's status
  /// flags: whether it is in a transaction now. That wins over what the
  /// statement's words implied: a deadlock rolls the block back, DDL
  /// commits it.
  void server_in_transaction(bool open) {
    block_open_ = open;
  }

private:
  enum class state { login, tls_handshake, awaiting_accept, idle, running,
                     closing };
  uint64_t resets_ = 0;

  void process();
  void handle_login(const packet& p);
  void handle_command(const packet& p);
  bool answer_locally(const std::string& sql);
  void start_afresh();
  void send(std::string_view payload);
  void send_columns(const std::vector<column>& cols);
  template <class Definition>
  void send_columns(size_t count, Definition definition_of);
  void send_result(const std::vector<column>& cols, const row_batch& rows);
  void end_result(const command_result& result);
  void end_statement();
  void prepare(const std::string& sql);
  void execute(const com_stmt_execute& cmd);
  void query(std::string sql);
  void run_statement(std::string sql);
  void run_rest_of_script();
  void start(std::string sql, std::vector<std::optional<std::string>> params,
             bool binary, std::vector<sql::literal_kind> kinds = {});
  /// SET autocommit: kept here, as the backend connections are shared.
  void set_autocommit(bool on);
  void reset_connection();
  void change_user(com_change_user c);
  /// The token for the login under way, after an AuthSwitchRequest.
  void switch_to_native_password();
  /// COMMIT or ROLLBACK on the block's connection, answering the command
  /// that implied it.
  void end_block_with(std::string sql);
  /// SERVER_STATUS_IN_TRANS and SERVER_STATUS_AUTOCOMMIT as they stand.
  uint16_t status() const;
  void after_statement(bool ok);

  struct prepared_statement {
    std::string sql; // with $n placeholders
    size_t params = 0;
    std::vector<param_type> types; // as last bound by the client
    bool long_data = false;        // sent COM_STMT_SEND_LONG_DATA
  };

  session_options opts_;
  state state_ = state::login;
  uint8_t seq_ = 0; // the next sequence id we write
  uint32_t client_capabilities_ = 0;
  bool ignores_space() const {
    return (client_capabilities_ & client_ignore_space) != 0;
  }
  std::string user_;
  std::string database_;
  bool changing_user_ = false; // the login under way is a COM_CHANGE_USER
  /// The statements of a multi-statement COM_QUERY not run yet.
  std::deque<std::string> script_;
  bool more_results_ = false; // of the statement: result_ends() is answering
  /// The database the running statement (a USE) makes the default.
  std::optional<std::string> using_;
  /// What LAST_INSERT_ID() returns: the last id a statement of this
  /// session generated, whichever pooled connection it ran on.
  uint64_t last_insert_id_ = 0;
  /// What FOUND_ROWS() returns: the rows of this session's last SELECT, or
  /// what SQL_CALC_FOUND_ROWS counted, whichever connection ran it.
  uint64_t found_rows_ = 0;
  /// The last statement's warnings or error (SHOW WARNINGS, SHOW ERRORS).
  std::vector<diagnostic> diagnostics_;
  std::optional<uint64_t> calculated_found_rows_;
  uint64_t rows_sent_ = 0; // by the running statement
  /// SET TRANSACTION (no SESSION, no GLOBAL): the next transaction's
  /// characteristics, given to the connection the next statement runs on.
  std::string next_transaction_;
  std::vector<column> current_columns_;
  std::vector<server_field> fields_; // the server's, for current_columns_
  std::string current_sql_;
  std::optional<int64_t> dml_count_; // DuckDB reports DML as a Count row
  bool binary_rows_ = false;         // the running statement was prepared
  bool tls_ = false;
  std::map<uint32_t, prepared_statement> prepared_;
  size_t prepared_bytes_ = 0; // their SQL
  uint32_t next_statement_id_ = 1;

  // Transactions: a block pins its backend connection in the driver.
  bool autocommit_ = true;
  bool block_open_ = false;
  sql::transaction_step current_step_ = sql::transaction_step::none;
  /// With autocommit off, a statement outside a block waits here while
  /// the BEGIN run for it opens one; that run's answer is
  /// not the client's.
  std::optional<query_event> after_begin_;
};

} // namespace qf::mysqlwire
