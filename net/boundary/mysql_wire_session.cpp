// MySQL wire sessions: login and KILL here; the statements on the fast
// lane or the actor path.
#include "net/boundary/mysql_wire_session.hpp"

#include "actors/data/query_registry.hpp"
#include "engines/mysql_async_connection.hpp"
#include "net/boundary/wire_session_base.hpp"
#include "protocols/common/secrets.hpp"
#include "protocols/mysqlwire/session.hpp"

#include <optional>
#include <utility>

namespace qf {

namespace {

using sql::transaction_step;

/// MySQL error codes for our refusals, each its own.
mysqlwire::error_info error_for(const statement_page& page) {
  const auto& n = page.error_name;
  const auto& msg = page.error_message;
  if (n == "PERMISSION_DENIED")
    return {1227, "42000", msg}; // ER_SPECIFIC_ACCESS_DENIED_ERROR
  if (n == "QUERY_QUEUE_FULL")
    return {1040, "08004", msg}; // ER_CON_COUNT_ERROR
  if (n == "EXCEEDED_TIME_LIMIT")
    return {1205, "HY000", msg}; // ER_LOCK_WAIT_TIMEOUT: capacity wait
  if (n == "USER_CANCELED" || n == "ABANDONED_QUERY")
    return {1317, "70100", msg}; // ER_QUERY_INTERRUPTED
  if (n == "NO_NODES_AVAILABLE" || n == "SERVER_STARTING_UP")
    return {1053, "08S01", msg}; // ER_SERVER_SHUTDOWN
  if (page.error_vendor_code > 0 && page.error_vendor_code < 65536
      && page.error_sqlstate.size() == 5) // a MySQL backend's own error
    return {static_cast<uint16_t>(page.error_vendor_code), page.error_sqlstate, msg};
  if (n == "SYNTAX_ERROR")
    return {1064, "42000", msg}; // ER_PARSE_ERROR
  if (page.error_sqlstate.size() == 5)
    return {1105, page.error_sqlstate, msg};
  return {1105, "HY000", msg}; // ER_UNKNOWN_ERROR
}

/// A fast-lane failure: the server's own error, else one for its kind.
mysqlwire::error_info error_for(const engines::engine_error& e) {
  auto code = e.vendor_code();
  if (code > 0 && code < 65536 && e.sqlstate().size() == 5)
    return {static_cast<uint16_t>(code), e.sqlstate(), e.what()};
  switch (e.kind()) {
    case engines::error_kind::cancelled:
      return {1317, "70100", e.what()};
    case engines::error_kind::syntax:
      return {1064, "42000", e.what()};
    default:
      return {1105, e.sqlstate().size() == 5 ? e.sqlstate() : "HY000", e.what()};
  }
}

/// KILL answers for the connections of the same user only, as MySQL does
/// for users without the PROCESS privilege.
std::string kill_key(uint32_t connection_id, const std::string& user) {
  return "mysql:" + std::to_string(connection_id) + ":" + user;
}

class mysql_wire_session
  : public wire_session_base<mysql_wire_session, engines::mysql_async_connection>,
    public engines::mysql_async_listener,
    public std::enable_shared_from_this<mysql_wire_session> {
  using base = wire_session_base<mysql_wire_session, engines::mysql_async_connection>;
  friend base;

public:
  mysql_wire_session(std::shared_ptr<node_services> node, std::shared_ptr<wire::connection> conn,
                     uint32_t connection_id, std::string scramble, bool tls_available)
    : base(std::move(node), std::move(conn), config::protocol::mysql_wire, "my_"),
      connection_id_(connection_id),
      scramble_(std::move(scramble)),
      session_(options(connection_id_, scramble_, tls_available)) {
    // nop
  }

  ~mysql_wire_session() override {
    if (!kill_key_.empty())
      node_->wire_sessions->remove(kill_key_);
  }

  mysql_wire_session(const mysql_wire_session&) = delete;
  mysql_wire_session& operator=(const mysql_wire_session&) = delete;

  /// The greeting.
  void start() {
    flush_output();
  }

  // -- the socket -------------------------------------------------------------

  /// The client went away: its statement is cancelled, its slot freed.
  void on_closed() override {
    closed_ = true;
    timers_.cancel_all();
    if (!kill_key_.empty())
      node_->wire_sessions->remove(std::exchange(kill_key_, {}));
    if (auto run = std::exchange(statement_, nullptr))
      run->cancel(true); // rolling back an open transaction
    let_backends_go();
  }

  // -- the fast lane's backend ------------------------------------------------

  void on_fields(std::vector<mysqlwire::server_field> fields) override {
    fields_ = std::move(fields);
  }

  void on_columns(std::vector<column> cols) override {
    session_.columns(cols, std::exchange(fields_, {}));
  }

  bool on_rows(row_batch& rows) override {
    if (!fast_) // the statement ended while its rows were on their way
      return false;
    fast_->rows += static_cast<int64_t>(rows.rows());
    session_.rows(rows);
    return stream_on();
  }

  void on_result_end(int64_t affected_rows) override {
    session_.result_ends(affected_rows);
  }

  void on_done(int64_t affected_rows) override {
    mysqlwire::command_result result{affected_rows};
    if (backend_) { // read before the connection goes back
      result.insert_id = backend_->insert_id();
      result.warnings = backend_->warnings();
      result.info = backend_->info();
    }
    bool warned = result.warnings > 0;
    read_what_it_left(std::move(result), warned);
  }

  /// What the client may ask of its statement next, and what its
  /// connection holds for it, is read there now, before the connection
  /// serves anyone else: its warnings first (our next statement there
  /// would clear them), then FOUND_ROWS() and LAST_INSERT_ID().
  void read_what_it_left(mysqlwire::command_result result, bool warnings) {
    if (warnings && backend_)
      return read_warnings(std::move(result));
    if ((counts_found_rows_ || sets_last_insert_id_) && backend_)
      return read_session_values(std::move(result));
    complete_fast(std::move(result));
  }

  void complete_fast(mysqlwire::command_result result) {
    transaction_set_ = false;
    finish_fast("Success", {});
    session_.server_in_transaction(block_.has_value());
    session_.complete(result);
    pump();
  }

  void on_failed(const engines::engine_error& e) override {
    // A statement that failed before its transaction began leaves that
    // SET TRANSACTION waiting on the connection, for whoever runs next.
    if (std::exchange(transaction_set_, false) && backend_)
      backend_->abandon(this);
    bool cancelled = e.kind() == engines::error_kind::cancelled;
    finish_fast(cancelled ? "Cancelled" : "Failed", e.what());
    session_.server_in_transaction(block_.has_value()); // a deadlock rolled it back
    session_.fail(error_for(e));
    pump();
  }

private:
  mysqlwire::session_options options(uint32_t connection_id, const std::string& scramble,
                                     bool tls_available) {
    mysqlwire::session_options opts{connection_id, scramble};
    opts.tls_available = tls_available;
    // MariaDB has the client's time_zone, sql_mode, isolation level...,
    // given to each connection its statements get (give_settings).
    opts.settings_on_server = [this](std::string_view sql) { return lane_would_run(sql); };
    return opts;
  }

  bool busy() const {
    return statement_ || fast_ || lane_ || waiting_for_kill_;
  }

  /// MySQL has no portals: a statement ends before the next comes.
  bool holds_a_portal() const {
    return false;
  }

  /// Hands the state machine's events over while no statement runs, sends
  /// the output, then closes, or reads more input when idle (a busy
  /// session reads nothing, so a fast client cannot queue without bound).
  void pump() {
    if (closed_)
      return;
    while (!busy()) {
      auto ev = session_.next_event();
      if (!ev)
        break;
      handle(*ev);
    }
    if (!busy())
      flush_output(); // else it goes with the statement's answer
    publish_idleness();
    if (session_.closing() || block_lost_) {
      conn_->close();
      return;
    }
    if (!busy()) {
      watch_idle_block();
      conn_->read_more(); // last: what it reads may end this session
    }
  }

  void handle(mysqlwire::session_event& ev) {
    if (auto* l = std::get_if<mysqlwire::login_event>(&ev))
      login(*l);
    else if (auto* k = std::get_if<mysqlwire::kill_event>(&ev))
      kill(*k);
    else if (auto* tls = std::get_if<mysqlwire::tls_event>(&ev)) {
      flush_output(); // the answer goes out in the clear, then the handshake
      conn_->start_tls(std::move(tls->received));
    } else {
      run(std::get<mysqlwire::query_event>(ev));
    }
  }

  // -- login and KILL ---------------------------------------------------------

  void login(const mysqlwire::login_event& ev) {
    auto active = node_->snapshot->load();
    if (!active || node_->draining.load()) {
      session_.reject({1053, "08S01", "the gateway is not accepting connections (no active "
                                      "configuration, or shutting down)"});
      return;
    }
    const auto& auth = active->config->auth;
    if (auth.enabled) {
      // mysql_native_password is a challenge: no password crosses the wire.
      auto i = auth.users.find(ev.user);
      auto expected = mysqlwire::native_password_token(
        i == auth.users.end() ? std::string{"\x01"} : i->second, scramble_);
      if (i == auth.users.end() || !secrets_equal(ev.auth_response, expected)) {
        node_->stats->auth_failed("mysqlWire");
        session_.reject({1045, "28000", "Access denied for user '" + ev.user
                                          + "' (using password: YES)"});
        return;
      }
    }
    user_ = ev.user;
    if (ev.ignore_space) // as MariaDB gives a session whose client asked
      settings_.start_with("sql_mode", "CONCAT(@@global.sql_mode, ',IGNORE_SPACE')");
    route_req_.protocol = config::protocol::mysql_wire;
    route_req_.user = user_;
    books_->open(user_, {}, ev.database);
    if (!kill_key_.empty()) // COM_CHANGE_USER: KILL takes the new user's name
      node_->wire_sessions->remove(kill_key_);
    kill_key_ = kill_key(connection_id_, user_);
    std::weak_ptr<mysql_wire_session> weak = weak_from_this();
    node_->wire_sessions->add(
      kill_key_, [weak] { cancel(weak, {}, false); },
      [weak](const std::string& id) { cancel(weak, id, false); }, books_->summary(),
      [weak](std::function<void()> closed) { cancel(weak, {}, true, std::move(closed)); });
    session_.accept();
    logged_in_ = true;
    timers_.logged_in();
  }

  void kill(const mysqlwire::kill_event& ev) {
    auto key = kill_key(ev.connection_id, user_);
    auto unknown = [&] {
      session_.fail({1094, "HY000", "Unknown thread id: " + std::to_string(ev.connection_id)});
    };
    if (ev.query_only) {
      if (!node_->wire_sessions->cancel(key))
        return unknown();
      return session_.complete(0);
    }
    // Answered once that connection is closed, as MariaDB's KILL returns
    // with its victim killed: the victim's next statement cannot run.
    waiting_for_kill_ = true;
    auto answered = node_->wire_sessions->close(key, [weak = weak_from_this()] {
      if (auto self = weak.lock())
        self->conn_->loop().post([weak] {
          if (auto s = weak.lock(); s && !s->closed_ && std::exchange(s->waiting_for_kill_, false)) {
            s->session_.complete(0);
            s->pump();
          }
        });
    });
    if (!answered) {
      waiting_for_kill_ = false;
      unknown();
    }
  }

  // -- statements -------------------------------------------------------------

  void run(mysqlwire::query_event& ev) {
    step_ = ev.step;
    param_kinds_ = std::move(ev.kinds);
    prelude_once_ = std::move(ev.prelude);
    counts_found_rows_ = ev.counts_found_rows;
    sets_last_insert_id_ = ev.sets_last_insert_id;
    if (!run_fast(ev))
      run_on_actors(std::move(ev.sql), std::move(ev.params));
  }

  /// Admits and starts the statement on the fast lane; false when it must
  /// take the actor path (nothing was taken then).
  bool run_fast(mysqlwire::query_event& ev) {
    if (pinned_)
      return false; // the actor path holds the block
    books_->set_catalog(session_.database()); // USE may have changed it
    if (block_) {
      start_in_block(std::move(ev.sql), std::move(ev.params));
      return true;
    }
    // Outside any block (a step inside one whose server ended it, as a
    // deadlock does): run as the server would, in autocommit.
    return start_fast(ev.sql, ev.params);
  }

  /// The client's default database (named at login, by COM_INIT_DB, USE
  /// or COM_CHANGE_USER) is given to each connection its statements run
  /// on, as its variables are.
  void settings_follow_session() {
    const auto& named = session_.database();
    if (!named.empty() && named != settings_.database()) // per statement: no copy when alike
      settings_.use(named);
  }

  void start_backend(std::shared_ptr<engines::mysql_async_connection> conn) {
    // None named: the connection's own, whichever cluster's it is.
    if (session_.database().empty() && settings_.database() != conn->home_database())
      settings_.use(conn->home_database());
    backend_ = std::move(conn);
    if (needs_replay(*backend_))
      return give_settings();
    if (!prelude_once_.empty()) { // the next transaction's SET TRANSACTION, on this connection
      transaction_set_ = true;
      prelude_ = std::exchange(prelude_once_, {});
      giving_ = backend_->settings();
      return give_settings();
    }
    backend_->run(fast_->sql, params_, shared_from_this(), param_kinds_);
  }

  /// A statement of ours on the client's statement's connection, right
  /// after it, before the connection serves anyone else: `then` gets its
  /// rows (none if it failed) on the session, if it is still there.
  template <class Then>
  void side_query(const char* sql, Then then) {
    struct reader : engines::mysql_async_listener {
      reader(std::weak_ptr<mysql_wire_session> s, Then t) : session(std::move(s)), then(std::move(t)) {}
      void on_columns(std::vector<column>) override {}
      bool on_rows(row_batch& rows) override {
        got.width = rows.width;
        got.cells.insert(got.cells.end(), rows.cells.begin(), rows.cells.end());
        return true;
      }
      void on_result_end(int64_t) override {}
      void on_done(int64_t) override {
        if (auto s = session.lock())
          then(*s, got);
      }
      void on_failed(const engines::engine_error&) override {
        if (auto s = session.lock())
          then(*s, row_batch{});
      }
      std::weak_ptr<mysql_wire_session> session;
      Then then;
      row_batch got;
    };
    backend_->run(sql, {}, std::make_shared<reader>(weak_from_this(), std::move(then)));
  }

  /// SQL_CALC_FOUND_ROWS counted on this connection, or LAST_INSERT_ID(expr)
  /// set it: FOUND_ROWS() and LAST_INSERT_ID() are read there; then the
  /// statement ends as it would have.
  void read_session_values(mysqlwire::command_result result) {
    bool found = std::exchange(counts_found_rows_, false);
    bool last_id = std::exchange(sets_last_insert_id_, false);
    side_query("SELECT FOUND_ROWS(), LAST_INSERT_ID()",
               [result = std::move(result), found, last_id](mysql_wire_session& s, const row_batch& rows) mutable {
      auto number = [&](size_t col) { return std::strtoull(rows.at(0, col)->c_str(), nullptr, 10); };
      if (rows.rows() > 0 && rows.width == 2 && rows.at(0, 0) && rows.at(0, 1)) {
        if (found)
          s.session_.found_rows(number(0));
        if (last_id)
          s.session_.last_insert_id(number(1));
      }
      s.complete_fast(std::move(result)); // the statement's own answer stands if the read failed
    });
  }

  /// The statement left warnings on its connection: SHOW WARNINGS reads
  /// them there, for the client's SHOW WARNINGS (the mariadb CLI's \W).
  void read_warnings(mysqlwire::command_result result) {
    side_query("SHOW WARNINGS", [result = std::move(result)](mysql_wire_session& s, const row_batch& rows) mutable {
      std::vector<mysqlwire::diagnostic> list;
      for (size_t r = 0; r < rows.rows() && rows.width >= 3; ++r) {
        const auto& code = rows.at(r, 1);
        list.push_back({rows.at(r, 0).value_or(""),
                        static_cast<uint32_t>(code ? std::strtoul(code->c_str(), nullptr, 10) : 0),
                        rows.at(r, 2).value_or("")});
      }
      s.session_.warnings(std::move(list));
      s.read_what_it_left(std::move(result), false);
    });
  }

  /// The connection's variables are not the client's (another client's
  /// SETs are on it, or this one's are not): one SET gives it the client's
  /// first; a failure fails the client's statement with it.
  void give_settings() {
    struct replay : settings_replay<engines::mysql_async_listener, mysql_wire_session> {
      using settings_replay::settings_replay;
      void on_result_end(int64_t) override {}
    };
    backend_->run(prelude_, {},
                  std::make_shared<replay>(weak_from_this()));
  }

  /// The fast statement ended (wire_session_base::settle_fast: the
  /// server's status flags say whether a block goes on).
  void finish_fast(std::string status, std::string error) {
    settle_fast(std::move(status), std::move(error));
  }

  /// The block the client has open is gone, and so is the session: its
  /// socket simply closes, as MariaDB's does at wait_timeout.
  void say_transaction_lost(const char*, const char*) {
    // nop
  }

  static bool lane_serves(const group_gate& gate) {
    return gate.mysql_only();
  }
  /// Each statement has a server connection to itself while it runs.
  static constexpr bool pipelines_statements = false;
  static const std::shared_ptr<engines::mysql_lane_pool>& lane_of(const cluster_state& cluster) {
    return cluster.mysql_lane;
  }
  static engines::engine_error cancelled_error() {
    return engines::engine_error(engines::error_kind::cancelled, "Query execution was interrupted");
  }
  static engines::engine_error connect_error(const std::string& why) {
    return engines::engine_error(engines::error_kind::internal, why);
  }
  /// Nothing: LAST_INSERT_ID() and FOUND_ROWS() are the session's own.
  static bool reads_previous_statements_state(std::string_view, std::string_view) {
    return false;
  }
  static bool may_leave_state_behind(std::string_view, std::string_view) {
    return false;
  }
  static engines::engine_error previous_connection_gone_error() {
    return engines::engine_error(engines::error_kind::internal, "no previous connection", "HY000");
  }
  static constexpr std::string_view letting_state_go
    = "COM_RESET_CONNECTION (a pool's reset on release) or a new connection lets a client's go";
  static engines::engine_error pinned_out_error(const std::string& why) {
    return engines::engine_error(engines::error_kind::user, why, "08004", 1040); // ER_CON_COUNT_ERROR
  }

  statement_spec actor_statement(std::string sql, engines::parameters values) const {
    auto spec = actor_spec(std::move(sql), std::move(values));
    spec.session.user = user_;
    spec.session.catalog = session_.database();
    return spec;
  }

  void run_on_actors(std::string sql, engines::parameters values) {
    columns_sent_ = false;
    start_on_actors(actor_statement(std::move(sql), std::move(values)));
  }

  /// One page of the running statement into the session.
  void on_page(statement_page& page) {
    if (closed_ || (!statement_ && !waiting_)) // (a wait in the gate's lane has none)
      return drop_page(*node_, page); // it finished as the client left
    if (take_admission(page))
      return;
    if (page.failed) {
      take_pin(page);
      statement_ = nullptr;
      session_.fail(error_for(page));
      return pump();
    }
    if (!columns_sent_ && (!page.columns.empty() || page.done)) {
      columns_sent_ = true;
      session_.columns(page.columns);
    }
    if (page.rows.rows() > 0)
      session_.rows(page.rows);
    if (page.done) {
      take_pin(page);
      statement_ = nullptr;
      session_.complete(page.affected);
      return pump();
    }
    flush_output(); // stream rows as they come
    pull_next();
  }

  const uint32_t connection_id_;
  const std::string scramble_;
  mysqlwire::server_session session_;
  std::string user_;
  std::string kill_key_; // registered once logged in

  // The actor path (wire_session_base has the running statement and an
  // open block's pinned connection; the fast lane's state is there too).
  bool columns_sent_ = false;
  std::vector<sql::literal_kind> param_kinds_; // the running statement's, as its client typed them
  std::vector<mysqlwire::server_field> fields_; // on_fields()'s, for the columns next
  std::string prelude_once_;                     // the statement's query_event::prelude
  bool transaction_set_ = false;                 // it ran before the running statement
  bool waiting_for_kill_ = false; // its KILL CONNECTION's victim is not closed yet
  bool counts_found_rows_ = false;               // the running statement's query_event's
  bool sets_last_insert_id_ = false;             // ... and this
};

} // namespace

std::shared_ptr<wire::handler>
make_mysql_wire_session(std::shared_ptr<node_services> node,
                        std::shared_ptr<wire::connection> conn, uint32_t connection_id,
                        std::string scramble, bool tls_available,
                        wire_session_limits limits) {
  auto session = std::make_shared<mysql_wire_session>(std::move(node), std::move(conn),
                                                      connection_id, std::move(scramble),
                                                      tls_available);
  session->start();
  session->start_timers(limits);
  return session;
}

} // namespace qf
