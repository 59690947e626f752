// PostgreSQL wire sessions: startup, authentication and cancel here; the
// statements on the fast lane or the actor path.
#include "net/boundary/pg_wire_session.hpp"

#include "net/boundary/pg_sqlstates.hpp"
#include "net/boundary/pg_wire_policy.hpp"
#include "engines/pg_async_connection.hpp"
#include "net/boundary/wire_session_base.hpp"
#include "protocols/common/secrets.hpp"
#include "protocols/pgwire/session.hpp"
#include "protocols/sql/statements.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

namespace qf {

namespace {

using clock = std::chrono::steady_clock;
using pgwire::transaction_step;

std::string param(const std::map<std::string, std::string>& params, const char* key) {
  auto i = params.find(key);
  return i == params.end() ? std::string{} : i->second;
}

class pg_wire_session : public wire_session_base<pg_wire_session, engines::pg_async_connection>,
                        public pg_wire_policy,
                        public engines::pg_async_listener,
                        public std::enable_shared_from_this<pg_wire_session> {
  using base = wire_session_base<pg_wire_session, engines::pg_async_connection>;
  friend base;

public:
  pg_wire_session(std::shared_ptr<node_services> node,
                  std::shared_ptr<wire::connection> conn, int32_t process_id,
                  int32_t secret_key, bool tls_available)
    : base(std::move(node), std::move(conn), config::protocol::postgres_wire, "pg_"),
      cancel_key_(std::to_string(process_id) + ":" + std::to_string(secret_key)),
      session_(options(process_id, secret_key, tls_available)) {
    // nop
  }

  ~pg_wire_session() override {
    node_->wire_sessions->remove(cancel_key_);
  }

  pg_wire_session(const pg_wire_session&) = delete;
  pg_wire_session& operator=(const pg_wire_session&) = delete;

  // -- the socket -------------------------------------------------------------

  /// The client went away: its statement is cancelled (rolling back an
  /// open transaction), its slot freed.
  /// Closed to make room at maxConnections: the client reads why, as
  /// after PostgreSQL's pg_terminate_backend().
  void on_evicted() override {
    session_.reject({"FATAL", "53300",
                     "terminating connection: the gateway is at its maxConnections and this "
                     "connection was idle the longest",
                     ""});
    flush_output();
  }

  void on_closed() override {
    closed_ = true;
    timers_.cancel_all();
    node_->wire_sessions->remove(cancel_key_);
    for (const auto& run : {statement_, suspended_})
      if (run)
        run->cancel(true);
    statement_ = suspended_ = nullptr;
    let_backends_go();
  }

  // -- the fast lane's backend ------------------------------------------------

  void on_notice(const engines::notice& n) override {
    session_.notice({n.severity, n.sqlstate, n.message, ""});
  }

  void on_columns(std::vector<column> cols) override {
    columns_sent_ = true;
    if (!session_.columns(cols)) { // refused; the session answered
      std::exchange(backend_, nullptr)->abandon(this);
      finish_fast("Failed", "the result cannot be sent in the PostgreSQL wire format");
      pump();
    }
  }

  bool on_rows(row_batch& rows) override {
    if (!fast_) // the statement ended while its rows were on their way
      return false;
    fast_->rows += static_cast<int64_t>(rows.rows());
    if (draining_) // a suspended run read to its end for its connection
      return true;
    session_.rows(rows);
    if (!session_.wants_rows()) { // the Execute's row limit: the server waits
      fast_suspended_ = true;
      session_.suspend();
      post_pump(); // not from inside the backend's read
      return false;
    }
    return stream_on();
  }

  bool on_relayed(std::string_view messages) override {
    if (!fast_)
      return false;
    session_.relay(messages);
    return stream_on();
  }

  bool on_copy_in() override {
    if (!fast_ || !session_.copy_in_start())
      return false;
    copy_waits_for_room_ = false;
    post_pump(); // the CopyInResponse goes out, then the client's data in
    return true;
  }

  void on_copy_drained() override {
    if (std::exchange(copy_waits_for_room_, false))
      pump();
  }

  void on_relay_detached() override {
    backend_.reset();
  }

  /// The statement waited behind another client's that stalled (or whose
  /// connection failed): it runs on another connection.
  void on_relay_moved() override {
    if (closed_ || !fast_)
      return; // on_relay_detached() let go of the connection already
    if (fast_->cancel_sent || fast_->cancelled) // its cancel came where it waited, or since
      return on_failed(cancelled_error());
    ++fast_->moves;
    take_backend();
  }

  void on_relay_done(int64_t data_rows, const engines::engine_error* error) override {
    if (closed_ || !fast_)
      return;
    fast_->rows = data_rows;
    if (error) {
      bool cancelled = error->kind() == engines::error_kind::cancelled;
      finish_fast(cancelled ? "Cancelled" : "Failed", error->what());
    } else {
      finish_fast("Success", {});
    }
    session_.relay_end(error != nullptr);
    pump();
  }

  void on_done(int64_t affected_rows) override {
    bool suspended = fast_suspended_; // it ended in the batch that hit the limit
    stopping_ = false; // ended before its cancel arrived: settle_fast lets the connection go
    finish_fast("Success", {});
    // Suspended in the batch that ended it: the portal's next Execute may
    // have come already (suspend() read it), and it takes the ending now.
    if (suspended && session_.awaits_execute())
      session_.suspended_run_ended(affected_rows, std::nullopt);
    else if (!std::exchange(draining_, false)) // else the client had its answer
      session_.complete(affected_rows);
    pump();
  }

  void on_failed(const engines::engine_error& e) override {
    if (closed_ || !fast_) // the client left, and its statement ended with it
      return;
    bool suspended = fast_suspended_;
    bool cancelled = e.kind() == engines::error_kind::cancelled;
    if (std::exchange(stopping_, false) && cancelled) { // the client had what it read
      fast_->cancel_sent = false; // it arrived
      finish_fast("Success", {});
      draining_ = false;
      return pump();
    }
    finish_fast(cancelled ? "Cancelled" : "Failed", e.what());
    pgwire::error_fields fields{"ERROR", sqlstate_for(e), e.what(), ""};
    if (suspended && session_.awaits_execute())
      session_.suspended_run_ended(-1, std::move(fields));
    else if (!std::exchange(draining_, false))
      session_.fail(fields);
    pump();
  }

private:
  pgwire::session_options options(int32_t process_id, int32_t secret_key, bool tls_available) {
    pgwire::session_options opts;
    opts.process_id = process_id;
    opts.secret_key = secret_key;
    opts.tls_available = tls_available;
    // PostgreSQL has the client's settings (search_path, statement_timeout,
    // roles, what row-level security reads), given to each connection its
    // statements get (give_settings); other engines have none of them.
    opts.settings_on_server = [this](std::string_view sql) { return lane_would_run(sql); };
    // PostgreSQL runs a script in one transaction; so it does here.
    opts.scripts_in_one_transaction = [this](std::string_view sql) { return lane_would_run(sql); };
    opts.statements_described_on_server = [this](std::string_view sql) { return lane_would_run(sql); };
    return opts;
  }

  bool busy() const {
    return statement_ || lane_ || (fast_ && !fast_suspended_);
  }

  /// A portal suspended between Executes on the actor path holds its
  /// statement (and slot) for the client's next Execute.
  bool holds_a_portal() const {
    return suspended_ != nullptr;
  }

  void post_pump() {
    conn_->loop().post([weak = weak_from_this()] {
      if (auto self = weak.lock())
        self->pump();
    });
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
    if (!busy() || session_.output_due()) // else it goes with the run's answer
      flush_output();
    publish_idleness();
    if (session_.closing() || block_lost_) {
      conn_->close();
      return;
    }
    if (session_.copying_in())
      return forward_copy();
    if (!busy()) {
      watch_idle_block();
      conn_->read_more(); // last: what it reads may end this session
    }
  }

  /// The client's copy data on to the server, read only while the server
  /// takes it: a client cannot queue an import in our memory.
  void forward_copy() {
    if (!backend_ || copy_waits_for_room_)
      return;
    bool last = session_.copy_in_sent();
    if (auto messages = session_.take_copy_messages(); !messages.empty())
      backend_->copy_forward(messages, last);
    if (last)
      return; // the server answers next
    if (backend_->copy_backlog() >= copy_backlog_limit)
      copy_waits_for_room_ = true;
    else
      conn_->read_more();
  }

  void handle(pgwire::session_event& ev) {
    if (std::holds_alternative<pgwire::startup_event>(ev))
      startup();
    else if (auto* pw = std::get_if<pgwire::password_event>(&ev))
      check_password(pw->password);
    else if (auto* run_ev = std::get_if<pgwire::run_event>(&ev))
      run(*run_ev);
    else if (std::holds_alternative<pgwire::resume_event>(ev))
      resume();
    else if (std::holds_alternative<pgwire::close_run_event>(ev))
      close_suspended();
    else if (std::holds_alternative<pgwire::tls_event>(ev)) {
      flush_output(); // the 'S' goes out in the clear, then the handshake
      conn_->start_tls({}); // PostgreSQL clients wait for the 'S'
    } else if (auto* c = std::get_if<pgwire::cancel_event>(&ev)) {
      // A wrong secret simply names no session.
      node_->wire_sessions->cancel(std::to_string(c->process_id) + ":"
                                   + std::to_string(c->secret_key));
    }
  }

  // -- startup ----------------------------------------------------------------

  void startup() {
    auto active = node_->snapshot->load();
    if (!active || node_->draining.load()) {
      session_.reject({"FATAL", "57P03",
                       "the gateway is not accepting connections (no "
                       "active configuration, or shutting down)",
                       ""});
      return;
    }
    const auto& auth = active->config->auth;
    if (!auth.enabled)
      return admit();
    if (!session_.tls_active() && !auth.allow_cleartext_without_tls) {
      session_.reject({"FATAL", "28000",
                       "password authentication requires TLS: connect "
                       "with sslmode=require",
                       ""});
      return;
    }
    session_.request_password();
  }

  void check_password(const std::string& password) {
    auto active = node_->snapshot->load();
    auto user = param(session_.startup_params(), "user");
    bool ok = false;
    if (active) {
      auto i = active->config->auth.users.find(user);
      // Compared even for unknown users, so timing tells nothing.
      auto expected = i == active->config->auth.users.end() ? std::string{} : i->second;
      ok = secrets_equal(password, expected) && i != active->config->auth.users.end();
    }
    if (!ok) {
      node_->stats->auth_failed("postgresWire");
      session_.reject({"FATAL", "28P01",
                       "password authentication failed for user \"" + user + "\"", ""});
      return;
    }
    admit();
  }

  /// Startup and authentication passed: open for statements.
  void admit() {
    const auto& params = session_.startup_params();
    user_ = param(params, "user");
    database_ = param(params, "database");
    application_ = param(params, "application_name");
    route_req_.protocol = config::protocol::postgres_wire;
    route_req_.user = user_;
    route_req_.headers = params; // the header router sees startup parameters
    // search_path, statement_timeout, pgjdbc's currentSchema, PGOPTIONS'
    // -c ...: the session's from its first statement on.
    for (const auto& [name, value] : sql::startup_settings(params))
      settings_.start_with(name, value);
    books_->open(user_, application_, database_);
    std::weak_ptr<pg_wire_session> weak = weak_from_this();
    node_->wire_sessions->add(
      cancel_key_, [weak] { cancel(weak, {}, false); },
      [weak](const std::string& id) { cancel(weak, id, false); }, books_->summary());
    session_.accept();
    logged_in_ = true;
    timers_.logged_in();
  }

  // -- statements -------------------------------------------------------------

  void run(pgwire::run_event& ev) {
    step_ = ev.step;
    columns_sent_ = false;
    param_types_ = std::move(ev.param_types);
    if (!run_fast(ev))
      run_on_actors(std::move(ev.sql), std::move(ev.params));
  }

  /// Admits and starts the statement on the fast lane; false when it must
  /// take the actor path (nothing was taken then).
  bool run_fast(pgwire::run_event& ev) {
    if (pinned_ || suspended_)
      return false; // the actor path holds the block or the portal
    if (block_) {
      start_in_block(std::move(ev.sql), std::move(ev.params));
      return true;
    }
    // An Execute with a row limit too: the run pauses at it
    // (fast_suspended_), on the client's connection with its settings.
    return start_fast(ev.sql, ev.params);
  }

  /// A statement is relayed where it can be (a simple Query's, an
  /// Execute without a row limit): the server's messages are already what
  /// the client reads, as pgbouncer passes them on.
  void start_backend(std::shared_ptr<engines::pg_async_connection> conn) {
    backend_ = std::move(conn);
    if (needs_replay(*backend_))
      return give_settings();
    if (session_.relays_a_statement_describe() && backend_->relay_capable())
      backend_->relay_describe(session_.described_statement(), session_.described_types(),
                               shared_from_this());
    else if (!session_.relayable() || !backend_->relay_capable())
      backend_->run(fast_->sql, params_, shared_from_this(), param_types_);
    else if (session_.relays_an_execute())
      backend_->relay_extended(fast_->sql, params_, param_types_, session_.relay_result_formats(),
                               session_.relay_describes(), session_.relays_a_named_statement(),
                               shared_from_this(), pipelines());
    else
      backend_->relay(fast_->sql, shared_from_this(), session_.statement_position(),
                      pipelines());
    if (backend_ && backend_->pipelining()) {
      const auto& lane = fast_->cluster->lane;
      lane->joinable(backend_);
      if (!backend_->has_home()) // once per connection, not per statement
        backend_->home([weak = std::weak_ptr(lane)](std::shared_ptr<engines::pg_async_connection> c) {
          if (auto pool = weak.lock())
            pool->give_back(std::move(c));
        });
    }
  }

  /// The statement is a plain one (fast_statement::plain), relayed, on a
  /// cluster that pipelines: it may run behind others' on one connection,
  /// and others behind it.
  bool pipelines() const {
    return fast_->plain && session_.relayable()
           && !session_.relays_a_statement_describe();
  }

  /// The statement starts behind others' plain ones on a connection of
  /// this loop's that takes it, with this session's settings on it.
  bool joined_a_pipeline(engines::pg_lane_pool& lane) {
    if (!pipelines() || fast_->moves > 0) // moved once: no more waiting on others
      return false;
    bool execute = session_.relays_an_execute();
    bool prepared = execute && session_.relays_a_named_statement();
    auto key = prepared ? pgwire::statement_key(fast_->sql, param_types_) : std::string{};
    auto conn = lane.join(conn_->loop(), [&](const engines::pg_async_connection& c) {
      return c.settings() == settings_ && c.takes_more_behind(fast_->cluster->pipeline_depth)
             && (!prepared || !c.parses(key));
    });
    if (!conn)
      return false;
    fast_->pipelined = true;
    backend_ = std::move(conn);
    if (execute)
      backend_->relay_extended_behind(fast_->sql, params_, param_types_,
                                      session_.relay_result_formats(), session_.relay_describes(),
                                      prepared, shared_from_this());
    else
      backend_->relay_behind(fast_->sql, shared_from_this(), session_.statement_position());
    return true;
  }

  /// What the settings take from the state machine: nothing here, the
  /// SETs are seen as they run.
  void settings_follow_session() {}

  /// The connection's settings are not the client's (another client's SETs
  /// are on it, or this one's are not): they are replayed first, in one
  /// Query that PostgreSQL runs as one transaction, so a failure leaves
  /// the connection as it was and fails the client's statement with it.
  void give_settings() {
    struct replay : settings_replay<engines::pg_async_listener, pg_wire_session> {
      using settings_replay::settings_replay;
      void on_notice(const engines::notice&) override {}
      bool on_relayed(std::string_view) override {
        return true;
      }
      void on_relay_done(int64_t, const engines::engine_error*) override {}
    };
    backend_->run(prelude_, {},
                  std::make_shared<replay>(weak_from_this()));
  }

  /// The fast statement ended (wire_session_base::settle_fast); a
  /// suspended run's pause with it.
  void finish_fast(std::string status, std::string error) {
    fast_suspended_ = false;
    if (backend_ && status == "Success" && deallocates_all(fast_->sql))
      backend_->forget_prepared_statements();
    settle_fast(std::move(status), std::move(error));
  }

  /// The block the client has open is gone, and so is the session.
  void say_transaction_lost(const char* sqlstate, const char* why) {
    session_.reject({"FATAL", sqlstate, why, ""});
    flush_output();
  }

  statement_spec actor_statement(std::string sql, engines::parameters values) const {
    auto spec = actor_spec(std::move(sql), std::move(values));
    spec.session.user = user_;
    spec.session.catalog = database_;
    spec.session.source = application_;
    spec.session.headers = session_.startup_params();
    return spec;
  }

  void run_on_actors(std::string sql, engines::parameters values) {
    start_on_actors(actor_statement(std::move(sql), std::move(values)));
  }

  /// One page of the running statement into the session.
  void on_page(statement_page& page) {
    if (closed_)
      return drop_page(*node_, page); // it finished as the client left
    if (take_admission(page))
      return;
    if (closing_run_) // a suspended run read to its end for its connection
      return end_closing_run(page);
    for (const auto& n : page.notices)
      session_.notice({n.severity, n.sqlstate, n.message, ""});
    if (page.failed) {
      take_pin(page);
      statement_ = nullptr;
      auto code = page.error_sqlstate.empty() ? sqlstate_for(page.error_name)
                                              : page.error_sqlstate;
      session_.fail({"ERROR", code, page.error_message, ""});
      return pump();
    }
    if (!columns_sent_ && (!page.columns.empty() || page.done)) {
      columns_sent_ = true;
      if (!session_.columns(page.columns)) { // refused; the session answered
        statement_->cancel(false);
        statement_ = nullptr;
        return pump();
      }
    }
    if (page.rows.rows() > 0)
      session_.rows(page.rows);
    if (!page.done && !session_.wants_rows()) { // PortalSuspended: stop reading
      suspended_ = std::exchange(statement_, nullptr);
      session_.suspend();
      return pump();
    }
    if (page.done) {
      take_pin(page);
      statement_ = nullptr;
      session_.complete(page.affected);
      return pump();
    }
    flush_output(); // stream rows as they come
    pull_next();
  }

  void resume() {
    if (fast_suspended_) {
      fast_suspended_ = false;
      return resume_backend();
    }
    statement_ = std::exchange(suspended_, nullptr);
    if (statement_)
      return pull_next();
    // Nothing to resume: the fast run ended in the batch that suspended it,
    // and its ending already answered the Execute that asked (on_done).
  }

  /// Ends a suspended run. Inside a transaction it holds the block's
  /// connection, so it is read to its end to get that back, and so is one
  /// on the client's own connection (a cancel that came late would hit its
  /// next statement there); otherwise it is cancelled, as PostgreSQL drops
  /// a portal at Sync, and the rest read away unseen until the server says
  /// it stopped.
  void close_suspended() {
    if (fast_suspended_) {
      fast_suspended_ = false;
      draining_ = true;
      if (!block_ && !backend_->holds_private_state()) {
        stopping_ = true;
        backend_->cancel(this);
        fast_->cancel_sent = true;
      }
      return resume_backend();
    }
    if (!suspended_)
      return;
    auto run = std::exchange(suspended_, nullptr);
    if (step_ != transaction_step::begin && step_ != transaction_step::inside) {
      run->cancel(false);
      return;
    }
    statement_ = std::move(run);
    closing_run_ = true;
    statement_->pull(rows_per_page);
  }

  /// The backend reads on from the loop, not from inside the pump.
  void resume_backend() {
    conn_->loop().post([weak = weak_from_this()] {
      if (auto self = weak.lock(); self && self->backend_)
        self->backend_->resume(self.get());
    });
  }

  void end_closing_run(statement_page& page) {
    if (!page.failed && !page.done)
      return statement_->pull(rows_per_page);
    closing_run_ = false;
    take_pin(page);
    statement_ = nullptr;
    pump();
  }

  std::string cancel_key_; // "pid:secret" in the node's cancel registry
  pgwire::server_session session_;
  std::string user_;
  std::string database_;
  std::string application_;

  bool columns_sent_ = false;
  std::vector<uint32_t> param_types_; // the running statement's, as its client declared them

  // The actor path (wire_session_base has the running statement).
  std::shared_ptr<statement_run> suspended_; // stopped at a row limit
  bool closing_run_ = false;

  // The fast lane (wire_session_base has the rest).
  bool fast_suspended_ = false; // at an Execute's row limit, the backend paused
  bool copy_waits_for_room_ = false; // the server has copy_backlog_limit to take
  static constexpr size_t copy_backlog_limit = 1 << 20;
  bool draining_ = false;       // the suspended run read to its end, unseen
  bool stopping_ = false;       // and cancelled: the client closed its portal outside a block
};

} // namespace

std::shared_ptr<wire::handler>
make_pg_wire_session(std::shared_ptr<node_services> node,
                     std::shared_ptr<wire::connection> conn, int32_t process_id,
                     int32_t secret_key, bool tls_available,
                     wire_session_limits limits) {
  auto session = std::make_shared<pg_wire_session>(std::move(node), std::move(conn), process_id,
                                                   secret_key, tls_available);
  session->start_timers(limits);
  return session;
}

} // namespace qf
