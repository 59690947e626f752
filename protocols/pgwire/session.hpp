// The server side of one PostgreSQL connection as a state machine: bytes in,
// bytes and events out. The driver runs the statements the events ask for
// and reports back. Pure: no sockets, no engine, no clock.
#pragma once

#include "protocols/common/rows.hpp"
#include "protocols/common/sans_io.hpp"
#include "protocols/pgwire/backend.hpp"
#include "protocols/pgwire/frontend.hpp"
#include "protocols/sql/transactions.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace qf::pgwire {

struct session_options {
  std::string server_version = "15.0 (QueryFlux)";
  size_t max_message = 16 * 1024 * 1024;
  int32_t process_id = 0;
  int32_t secret_key = 0;
  /// Answer SSLRequest with 'S' (the driver then runs the TLS handshake).
  bool tls_available = false;
  /// What one connection may keep in named statements and portals (and
  /// all of them, in bytes): a client that leaks them (prepares per query,
  /// never closes) gets an error (53400) instead of growing the gateway's
  /// memory for everyone.
  size_t max_kept_entries = 10'000;
  size_t max_kept_bytes = 64 * 1024 * 1024;
  /// Whether SET, RESET and SHOW (this one), and DEALLOCATE of a statement
  /// SQL PREPARE made, go to the engine as run_events rather than being
  /// answered here: the engine has these settings and the driver gives the
  /// client's to each connection its statements run on (a PostgreSQL
  /// cluster on the fast lane). Unset: answered here.
  std::function<bool(std::string_view statement)> settings_on_server;
  /// Whether the statements of a simple Query (this script) run in one
  /// implicit transaction, as PostgreSQL runs them: where the engine is
  /// PostgreSQL. Unset: each statement on its own.
  std::function<bool(std::string_view script)> scripts_in_one_transaction;
  /// Whether the server the statement would run on describes a client's
  /// statement itself (Parse, Describe, Sync; see
  /// relays_a_statement_describe()): a PostgreSQL cluster on the fast
  /// lane. Unset, or where it cannot: a probe describes its columns.
  std::function<bool(std::string_view statement)> statements_described_on_server;
};

/// The startup packet arrived: the driver reads startup_params() and
/// calls accept() or reject().
struct startup_event {};

using sql::transaction_step;

/// Run one statement: the driver reports with columns(), rows(),
/// complete() or fail().
struct run_event {
  std::string sql;
  std::vector<std::optional<std::string>> params; // $1... as text
  transaction_step step = transaction_step::none;
  /// The types the client's Parse declared for them (0: not declared).
  std::vector<uint32_t> param_types{};
};

/// A CancelRequest: the driver cancels that session's statement. This
/// connection closes.
struct cancel_event {
  int32_t process_id = 0;
  int32_t secret_key = 0;
};

/// The client asked for TLS and was told 'S': send the output, run the
/// handshake, then call tls_started().
struct tls_event {};

/// The password asked for with request_password(): accept() or reject().
struct password_event {
  std::string password;
};

/// An Execute with a row limit stopped a run (PortalSuspended). The driver
/// keeps the run and stops reading it until one of these:
/// resume_event: the client executes the portal again; read more rows.
struct resume_event {};
/// close_run_event: the portal is gone (Close, Sync outside a transaction,
/// another statement); end the run.
struct close_run_event {};

using session_event
  = std::variant<startup_event, run_event, cancel_event, tls_event,
                 password_event, resume_event, close_run_event>;

class server_session : public sans_io_session<session_event> {
public:
  explicit server_session(session_options opts);

  /// Takes bytes from the client and handles what it can.
  void feed(std::string_view bytes);

  /// Once true, send the output, then close the connection.
  bool closing() const {
    return state_ == state::closing;
  }

  /// The user and database the client asked for.
  const std::map<std::string, std::string>& startup_params() const {
    return startup_params_;
  }

  // -- driver reports ---------------------------------------------------------

  void accept();
  void tls_started();
  /// Asks the client for its password (AuthenticationCleartextPassword).
  void request_password();

  bool tls_active() const {
    return tls_;
  }
  void reject(const error_fields& e);
  /// A NoticeResponse (the server's RAISE NOTICE, say), which a client
  /// takes at any point of a run.
  void notice(const error_fields& e);
  /// Returns false when the statement was refused (its result cannot be
  /// encoded): the driver then cancels it and reports nothing more.
  bool columns(const std::vector<column>& cols);
  void rows(const row_batch& batch);
  /// False once an Execute's row limit is reached: the driver then stops
  /// reading and calls suspend() (unless the run is complete).
  bool wants_rows() const {
    return !awaiting_execute_ && (row_limit_ == 0 || rows_sent_ < row_limit_);
  }
  void suspend();
  /// A portal's run is suspended, waiting for its next Execute.
  bool awaits_execute() const {
    return suspended_.has_value();
  }
  /// The run ended after suspend(), with the rows past the limit held
  /// here: the Executes to come take them, then this ending.
  void suspended_run_ended(int64_t affected_rows, std::optional<error_fields> error);
  void complete(int64_t affected_rows);
  void fail(const error_fields& e);

  // -- a result relayed as the server wrote it -------------------------------
  // For a PostgreSQL backend, a statement may skip columns()/rows()/
  // complete(): the driver appends the server's own RowDescription,
  // DataRows, CommandComplete or ErrorResponse, then says how it ended;
  // the session writes ReadyForQuery (simple Query) or goes on to the
  // client's Sync (extended protocol).

  /// The running statement's result may be relayed: a statement of a
  /// simple Query, or an Execute without a row limit (with or without the
  /// Describe of its portal), not our own Describe probe.
  bool relayable() const {
    return state_ == state::running && hidden_ == hidden::none && !describing_ && !parking_
           && !awaiting_execute_ && row_limit_ == 0
           && (!extended_ || send_rows_);
  }
  /// Whether the relayed run is an Execute, which the backend must get in
  /// the extended protocol, with these two.
  bool relays_an_execute() const {
    return extended_;
  }
  /// The Execute's portal was bound from a statement the client named:
  /// one it means to run again, which the backend may keep prepared.
  bool relays_a_named_statement() const {
    return named_statement_;
  }
  bool relay_describes() const {
    return send_description_;
  }
  /// Where the running statement starts in its client's Query, in
  /// characters (0 for an Execute's): what the server counts an error's
  /// position from is only that statement.
  int32_t statement_position() const;
  const std::vector<int16_t>& relay_result_formats() const {
    return result_formats_;
  }
  /// The running statement is the Describe of a client's statement, for
  /// the server to describe (Parse of this text with these types,
  /// Describe, Sync): its ParameterDescription and RowDescription (or
  /// NoData, or ErrorResponse) are relayed. A driver whose connection
  /// cannot relay runs the run_event instead: a probe that answers NoData
  /// where it cannot tell the columns, and runs nothing of the client's.
  bool relays_a_statement_describe() const {
    return state_ == state::running && describing_ && described_on_server_;
  }
  const std::string& described_statement() const {
    return described_sql_;
  }
  const std::vector<uint32_t>& described_types() const {
    return described_types_;
  }
  /// The output holds what must go now: a ReadyForQuery, or what came
  /// before a client's Flush. The rest (ParseComplete and BindComplete
  /// before a run) may wait for the run's answer, as PostgreSQL buffers
  /// its output until Sync, so the client reads one batch in one wake-up.
  bool output_due() const {
    return output_due_;
  }
  void clear_output() {
    sans_io_session::clear_output();
    output_due_ = false;
  }

  void relay(std::string_view server_messages);
  /// failed: the server's ErrorResponse was among the relayed messages.
  void relay_end(bool failed);

  // -- COPY FROM STDIN, relayed ------------------------------------------------
  // The server's CopyInResponse came for the running statement of a simple
  // Query (relayed: the driver passes it on). The client's CopyData,
  // CopyDone and CopyFail are then taken whole for the server, Flush and
  // Sync ignored, and any other message ends the copy with a CopyFail of
  // ours, as PostgreSQL does; the server's answer ends the statement as
  // relay_end() says.

  /// How many times the client reset its session (DISCARD ALL): a backend
  /// connection kept for its session state goes then.
  uint64_t session_resets() const {
    return resets_;
  }

  /// False when the running statement cannot take a copy (an Execute's).
  bool copy_in_start();
  bool copying_in() const {
    return copy_in_ != copy_in::none;
  }
  /// The client's messages for the server so far.
  std::string take_copy_messages() {
    return std::exchange(copy_messages_, {});
  }
  /// The client's CopyDone or CopyFail is among them: nothing follows.
  bool copy_in_sent() const {
    return copy_in_ == copy_in::sent;
  }

private:
  enum class state { startup, tls_handshake, awaiting_accept,
                     awaiting_password, idle, running, closing };

  struct prepared_statement {
    std::string sql;
    std::vector<uint32_t> param_types;
  };

  // Execute with a row limit: rows past it wait in held_ for the next
  // Execute of the same portal, while the driver holds the run.
  struct suspended_run {
    std::string portal;
    std::optional<int64_t> finished; // affected rows, once the run ended
    std::optional<error_fields> error; // how it ended, if it failed
  };

  /// A suspended run read to its end when another statement came (its
  /// rows kept, park_suspended()): its next Execute takes it back.
  struct parked_run {
    suspended_run run;
    row_batch rows;
    size_t from = 0;
    std::vector<column> columns;
  };

  struct portal {
    std::string sql;
    std::vector<std::optional<std::string>> params;
    std::vector<int16_t> result_formats;
    bool named_statement = false;
    std::vector<uint32_t> param_types; // its statement's
    bool ran = false;                  // to its end: nothing runs again
    bool lost = false;                 // its run closed for another's: see abandon_suspended()
    std::shared_ptr<parked_run> parked{}; // see park_suspended()
  };

  void process();
  void take_copy_data();
  void handle_extended(message& msg);
  void handle_parse(parse& p);
  // The statements and portals kept, and what they take (see
  // session_options::max_kept_entries): every change goes through these.
  static size_t size_of(const prepared_statement& s);
  static size_t size_of(const portal& p);
  bool room_for(size_t bytes, size_t replaced_bytes, bool new_named) const;
  error_fields too_much_kept() const;
  template <class Kept>
  void keep(std::map<std::string, Kept>& kept, const std::string& name, Kept value);
  template <class Kept>
  void forget(std::map<std::string, Kept>& kept, const std::string& name);
  void forget_all_statements();
  void handle_bind(bind& b);
  void handle_describe(const describe& d);
  void handle_execute(const std::string& portal_name, bool describe_first,
                      int32_t max_rows);
  void resume(int32_t max_rows);
  void execute_finished(const std::string& name, const std::string& sql);
  void portal_ran();
  /// param_types: announced in the ParameterDescription; declared_types:
  /// the client's own, for the probe.
  void describe_statement(const std::string& sql, std::vector<uint32_t> param_types,
                          std::vector<uint32_t> declared_types, size_t placeholders);
  void describe_on_server(const std::string& name, const prepared_statement& stmt);
  void describing_started(std::string probe);
  void close_suspended();
  void abandon_suspended();
  bool park_suspended(std::function<void()> then);
  void parked(std::optional<int64_t> finished, std::optional<error_fields> error);
  void unpark(portal& p, const std::string& name);
  void drop_parked();
  void extended_error(const error_fields& e);
  /// The row limit of an Execute of this portal waiting next, if one is.
  std::optional<int32_t> next_is_execute_of(const std::string& portal_name);
  void handle_startup(std::string_view body);
  void handle_query(std::string sql);
  void next_statement();
  /// The implicit transaction of a script: BEGIN before its statements,
  /// COMMIT after them, ROLLBACK after one fails. Ours: the client sees
  /// none of their answers.
  enum class hidden { none, begin, commit, rollback };
  void run_hidden(hidden what);
  void hidden_ended(const error_fields* error);
  /// The simple Query is answered: ReadyForQuery, then what the client
  /// sent meanwhile.
  void end_query();
  /// A statement of the simple Query failed (its ErrorResponse went out):
  /// the rest is skipped, the implicit transaction rolled back.
  void query_failed();
  std::string outside_a_block_only() const;
  enum class implicit { runs, answered, refused };
  implicit in_implicit_block(bool describe_first, bool execute_too);
  enum class batch_answer { no, yes, not_yet };
  batch_answer in_a_batch(const message& msg, size_t consumed) const;
  /// keyword: the statement's leading one (sql::leading_keyword).
  bool local_statement(std::string_view keyword) const;
  /// What the session itself does as the current statement goes to the
  /// engine: DEALLOCATE ALL forgets its statements too.
  void leaving_for_engine();
  void run_locally(const std::string& sql);
  void finish_extended();
  void finish_statement(std::string tag);
  void protocol_violation(const char* what);
  char transaction_status() const;
  void send_ready();
  transaction_step current_step_of() const;
  /// A setting's value by its name in any case, and the name as spelled
  /// here; null when no such setting is known.
  std::string* find_setting(std::string_view name, std::string_view& canonical);
  /// The i-th reported setting's value before any SET.
  std::string default_setting(size_t i) const;
  /// RESET: a setting back to its default, or all of them ("all").
  void reset_setting(std::string_view name);
  /// The statement now answered, and its leading keyword, read once.
  void set_current(std::string_view sql);
  void after_statement(bool ok);

  session_options opts_;
  state state_ = state::startup;
  std::map<std::string, std::string> startup_params_;
  /// The values of the settings PostgreSQL reports at startup, in its
  /// order (server_version ... application_name), then any other a client
  /// SET.
  std::array<std::string, 8> reported_values_;
  std::vector<std::pair<std::string, std::string>> other_settings_;
  std::vector<std::pair<std::string, std::string>> reports_;
  enum class transaction { idle, open, failed };
  transaction transaction_ = transaction::idle;
  transaction_step current_step_ = transaction_step::none;

  // The simple query being answered: its statements, one at a time.
  std::string query_text_;
  std::vector<std::string_view> pending_; // views of query_text_
  size_t next_pending_ = 0;
  bool script_in_one_transaction_ = false; // of this query
  bool implicit_open_ = false; // the open block is the script's implicit one
  hidden hidden_ = hidden::none; // the running statement is ours
  std::string current_;
  std::string current_keyword_;
  std::vector<column> current_columns_;
  int64_t rows_sent_ = 0;
  std::optional<int64_t> dml_count_; // DuckDB reports DML as a Count row
  bool skip_to_sync_ = false; // after an error in an extended batch
  enum class copy_in { none, open, sent };
  copy_in copy_in_ = copy_in::none;
  std::string copy_messages_; // the client's, for the server
  uint64_t resets_ = 0;
  bool tls_ = false;

  // The extended protocol: named (and unnamed "") statements and portals,
  // and how the running statement answers.
  std::map<std::string, prepared_statement> statements_;
  std::map<std::string, portal> portals_;
  size_t kept_bytes_ = 0; // of statements_ and portals_
  bool output_due_ = false;      // see output_due()
  bool extended_ = false;        // the running statement came from Execute
  bool named_statement_ = false; // ... of a portal of a named statement
  bool send_description_ = true; // RowDescription (simple query, Describe)
  bool send_rows_ = true;        // false for a Describe without Execute
  std::vector<int16_t> result_formats_;
  /// While a Describe of a statement runs its probe: the parameter types.
  std::optional<std::vector<uint32_t>> describing_;
  /// ... described by the server (relays_a_statement_describe()): the
  /// statement's name, text and declared types. The types the server
  /// infers become the statement's: the client binds by them.
  bool described_on_server_ = false;
  std::string described_name_;
  std::string described_sql_;
  std::vector<uint32_t> described_types_;
  /// The run of a portal's Describe with no Execute behind it yet (pg-cursor
  /// sends each Execute later): no rows until one comes; it pauses after
  /// the RowDescription, as a suspended portal without PortalSuspended.
  bool awaiting_execute_ = false;

  int32_t row_limit_ = 0; // of the running Execute; 0: no limit
  std::string running_portal_;
  row_batch held_;
  size_t held_from_ = 0;
  std::optional<suspended_run> suspended_;
  /// While a suspended run is read to its end to be parked: its portal,
  /// and what was to run when it came (handled once it is parked).
  std::optional<std::string> parking_;
  std::function<void()> after_parking_;
  size_t parking_bytes_ = 0; // of the rows it read, with every parked run's
  bool park_overflow_ = false; // past max_parked_bytes: the portal is lost instead
};

} // namespace qf::pgwire
