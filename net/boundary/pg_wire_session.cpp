// PostgreSQL wire sessions: startup, authentication and cancel here; the
// statements on the fast lane or the actor path.
#include "net/boundary/pg_wire_session.hpp"

#include "actors/data/statement_run.hpp"
#include "actors/node/node.hpp"
#include "engines/lane_pool.hpp"
#include "engines/pg_async_connection.hpp"
#include "net/boundary/fast_lane.hpp"
#include "net/boundary/session_output.hpp"
#include "net/boundary/session_timers.hpp"
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

constexpr uint32_t rows_per_page = 4096;

/// SQLSTATEs for our failures: each refusal has its own.
std::string sqlstate_for(const std::string& error_name) {
  if (error_name == "PERMISSION_DENIED")
    return "42501"; // insufficient_privilege: a routing rule denied it
  if (error_name == "QUERY_QUEUE_FULL")
    return "53300"; // too_many_connections
  if (error_name == "EXCEEDED_TIME_LIMIT")
    return "53400"; // configuration_limit_exceeded: capacity wait
  if (error_name == "USER_CANCELED" || error_name == "ABANDONED_QUERY")
    return "57014"; // query_canceled
  if (error_name == "NO_NODES_AVAILABLE")
    return "53000"; // insufficient_resources
  if (error_name == "SERVER_STARTING_UP")
    return "57P03"; // cannot_connect_now: no active configuration
  if (error_name == "SYNTAX_ERROR")
    return "42601";
  if (error_name == "GENERIC_USER_ERROR")
    return "42000";
  return "XX000";
}

/// An engine failure's SQLSTATE: the server's own, else one for its kind.
std::string sqlstate_for(const engines::engine_error& e) {
  if (!e.sqlstate().empty())
    return e.sqlstate();
  switch (e.kind()) {
    case engines::error_kind::cancelled:
      return "57014";
    case engines::error_kind::syntax:
      return "42601";
    case engines::error_kind::user:
      return "42000";
    case engines::error_kind::internal:
      return "XX000";
  }
  return "XX000";
}

std::string param(const std::map<std::string, std::string>& params, const char* key) {
  auto i = params.find(key);
  return i == params.end() ? std::string{} : i->second;
}

class pg_wire_session : public wire::handler,
                        public engines::pg_async_listener,
                        public std::enable_shared_from_this<pg_wire_session> {
public:
  pg_wire_session(std::shared_ptr<node_services> node,
                  std::shared_ptr<wire::connection> conn, int32_t process_id,
                  int32_t secret_key, bool tls_available)
    : node_(std::move(node)),
      conn_(std::move(conn)),
      cancel_key_(std::to_string(process_id) + ":" + std::to_string(secret_key)),
      session_(options(process_id, secret_key, tls_available)) {
    // nop
  }

  ~pg_wire_session() override {
    node_->wire_sessions->remove(cancel_key_);
  }

  pg_wire_session(const pg_wire_session&) = delete;
  pg_wire_session& operator=(const pg_wire_session&) = delete;

  /// On the loop's thread (session_timers::arm_login).
  void expect_login_within(std::chrono::milliseconds timeout) {
    timers_.arm_login(timeout, [weak = weak_from_this()] {
      if (auto self = weak.lock(); self && !self->closed_ && !self->logged_in_)
        self->conn_->close();
    });
  }

  // -- the socket -------------------------------------------------------------

  void on_data(std::string_view bytes) override {
    session_.feed(bytes);
    pump();
  }

  void on_tls_ready() override {
    session_.tls_started();
    pump();
  }

  /// The client went away: its statement is cancelled (rolling back an
  /// open transaction), its slot freed.
  void on_closed() override {
    closed_ = true;
    timers_.cancel_all();
    node_->wire_sessions->remove(cancel_key_);
    for (const auto& run : {statement_, suspended_})
      if (run)
        run->cancel(true);
    statement_ = suspended_ = nullptr;
    if (pinned_)
      abandon_transaction(*node_, *pinned_);
    pinned_.reset();
    if (fast_) {
      if (backend_)
        std::exchange(backend_, nullptr)->abandon();
      finish_fast("Cancelled", "the client disconnected");
    }
    drop_block(block_, *books_);
  }

  /// The client hung up while a statement ran (session_timers::arm_hang_up).
  void on_hang_up() override {
    timers_.arm_hang_up([weak = weak_from_this()] {
      if (auto self = weak.lock(); self && !self->closed_ && self->busy())
        self->conn_->close();
    });
  }

  // -- the fast lane's backend ------------------------------------------------

  void on_columns(std::vector<column> cols) override {
    columns_sent_ = true;
    if (!session_.columns(cols)) { // refused; the session answered
      std::exchange(backend_, nullptr)->abandon();
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

  void on_relay_done(int64_t data_rows, const engines::engine_error* error) override {
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
    finish_fast("Success", {});
    if (suspended)
      session_.suspended_run_ended(affected_rows, std::nullopt);
    else if (!std::exchange(draining_, false)) // else the client had its answer
      session_.complete(affected_rows);
    pump();
  }

  void on_failed(const engines::engine_error& e) override {
    bool suspended = fast_suspended_;
    bool cancelled = e.kind() == engines::error_kind::cancelled;
    finish_fast(cancelled ? "Cancelled" : "Failed", e.what());
    pgwire::error_fields fields{"ERROR", sqlstate_for(e), e.what(), ""};
    if (suspended)
      session_.suspended_run_ended(-1, std::move(fields));
    else if (!std::exchange(draining_, false))
      session_.fail(fields);
    pump();
  }

private:
  static pgwire::session_options options(int32_t process_id, int32_t secret_key,
                                         bool tls_available) {
    pgwire::session_options opts;
    opts.process_id = process_id;
    opts.secret_key = secret_key;
    opts.tls_available = tls_available;
    return opts;
  }

  bool busy() const {
    return statement_ || (fast_ && !fast_suspended_);
  }

  void post_pump() {
    conn_->loop().post([weak = weak_from_this()] {
      if (auto self = weak.lock())
        self->pump();
    });
  }

  void flush_output() {
    qf::flush_output(session_, *conn_);
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
    if (session_.closing() || block_lost_) {
      conn_->close();
      return;
    }
    if (!busy())
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
    books_->open(user_, application_, database_);
    std::weak_ptr<pg_wire_session> weak = weak_from_this();
    node_->wire_sessions->add(
      cancel_key_, [weak] { cancel(weak, {}); },
      [weak](const std::string& id) { cancel(weak, id); }, books_->summary());
    session_.accept();
    logged_in_ = true;
    timers_.logged_in();
  }

  /// Cancels the session's running statement from any thread; with a
  /// query id, only while that fast-lane statement runs.
  static void cancel(const std::weak_ptr<pg_wire_session>& weak, const std::string& id) {
    auto self = weak.lock();
    if (!self)
      return;
    self->conn_->loop().post([weak, id] {
      auto session = weak.lock();
      if (!session || (!id.empty() && !(session->fast_ && session->fast_->id == id)))
        return;
      if (session->statement_)
        session->statement_->cancel(false);
      else if (session->backend_)
        session->backend_->cancel();
      else if (session->fast_) // its connection is still opening
        session->fast_->cancelled = true;
    });
  }

  // -- statements -------------------------------------------------------------

  void run(pgwire::run_event& ev) {
    step_ = ev.step;
    columns_sent_ = false;
    if (!run_fast(ev))
      run_on_actors(std::move(ev.sql), std::move(ev.params));
  }

  /// Admits and starts the statement on the fast lane; false when it must
  /// take the actor path (nothing was taken then).
  bool run_fast(pgwire::run_event& ev) {
    if (pinned_ || suspended_)
      return false; // the actor path holds the block or the portal
    if (block_)
      return run_in_block(ev);
    if (session_.row_limited())
      return false; // a portal that may suspend: the actor path holds it
    auto active = node_->snapshot->load();
    if (!active)
      return false;
    route_req_.sql = std::move(ev.sql);
    auto route = active->routes->route(route_req_);
    ev.sql = std::move(route_req_.sql);
    if (route.denied)
      return false;
    auto gate = active->group_gates.find(route.group);
    if (gate == active->group_gates.end() || !gate->second->postgres_only())
      return false;
    auto cluster = gate->second->try_place_newcomer();
    if (!cluster)
      return false; // it queues, on the actor path
    fast_.emplace();
    auto& st = *fast_;
    st.sql = std::move(ev.sql);
    st.route = std::move(route);
    st.cluster = std::move(cluster);
    params_ = std::move(ev.params);
    // The statement leaves first, the bookkeeping follows while the server
    // works: the backend reports nothing from inside run() or relay().
    node_->in_flight.fetch_add(1); // before it leaves: a drain waits for it
    auto idle = st.cluster->lane->take(conn_->loop());
    bool started = idle != nullptr;
    if (started)
      start_backend(std::move(idle));
    books_->admitted(st);
    if (started)
      return true;
    st.cluster->lane->fetch(
      conn_->loop(),
      [weak = weak_from_this(), lane = st.cluster->lane](
        std::shared_ptr<engines::pg_async_connection> conn, std::string error) {
        auto self = weak.lock();
        if (!self || self->closed_ || !self->fast_) { // nobody waits for it
          lane->give_back(std::move(conn));
          return;
        }
        if (self->fast_->cancelled) { // before it ever reached the server
          lane->give_back(std::move(conn));
          self->on_failed(engines::engine_error(engines::error_kind::cancelled,
                                                "canceling statement due to user request",
                                                "57014"));
          return;
        }
        if (!conn) {
          self->on_failed(engines::engine_error(engines::error_kind::internal, error, "08001"));
          return;
        }
        self->start_backend(std::move(conn));
      });
    return true;
  }

  /// The next statement of a block on the fast lane: on the block's
  /// connection, under the slot it holds, neither routed nor admitted.
  bool run_in_block(pgwire::run_event& ev) {
    std::shared_ptr<engines::pg_async_connection> conn;
    fast_ = block_->next(std::move(ev.sql), conn);
    params_ = std::move(ev.params);
    node_->in_flight.fetch_add(1);
    start_backend(std::move(conn));
    books_->admitted(*fast_);
    return true;
  }

  /// A statement is relayed where it can be (a simple Query's, an
  /// Execute without a row limit): the server's messages are already what
  /// the client reads, as pgbouncer passes them on.
  void start_backend(std::shared_ptr<engines::pg_async_connection> conn) {
    backend_ = std::move(conn);
    if (!session_.relayable() || !backend_->relay_capable())
      backend_->run(fast_->sql, params_, shared_from_this());
    else if (session_.relays_an_execute())
      backend_->relay_extended(fast_->sql, params_, session_.relay_result_formats(),
                               session_.relay_describes(),
                               session_.relays_a_named_statement(), shared_from_this());
    else
      backend_->relay(fast_->sql, shared_from_this());
  }

  /// After rows were added: false pauses the backend (session_output).
  bool stream_on() {
    return qf::stream_on(session_, *conn_, [weak = weak_from_this()] {
      if (auto self = weak.lock(); self && self->backend_)
        self->backend_->resume();
    });
  }

  /// The fast statement ended: connection back to the pool and slot freed
  /// at once, unless its ReadyForQuery says a block goes on
  /// (settle_connection); the query recorded once the answers ready now
  /// went out.
  void finish_fast(std::string status, std::string error) {
    fast_suspended_ = false;
    auto& lane = *fast_->cluster->lane;
    block_lost_ = settle_connection(*fast_, backend_, block_, lane,
                                    [weak = weak_from_this()](const void* which) {
                                      if (auto self = weak.lock())
                                        self->block_hung_up(which);
                                    })
                  && !closed_;
    auto done = std::move(*fast_);
    fast_.reset();
    books_->ended(std::move(done), conn_->loop(), std::move(status), std::move(error));
  }

  /// The server hung up the connection parked in the block between its
  /// statements (`which`, unless a statement took it since): the
  /// transaction is gone, and so goes the client, as PostgreSQL ends a
  /// session at idle_in_transaction_session_timeout. Its slot is freed now,
  /// not when the client next speaks.
  void block_hung_up(const void* which) {
    if (closed_ || busy() || !block_ || block_->conn.get() != which)
      return;
    session_.reject({"FATAL", "08006",
                     "the server closed this transaction's connection (its "
                     "idle_in_transaction_session_timeout, or the backend was "
                     "terminated): the transaction is rolled back",
                     ""});
    flush_output();
    conn_->close();
  }

  void run_on_actors(std::string sql, engines::parameters values) {
    const auto& params = session_.startup_params();
    statement_spec spec;
    spec.ticket = node_->next_ticket.fetch_add(1);
    spec.id = node_->query_id(spec.ticket, "pg_");
    spec.sql = std::move(sql);
    spec.params = std::move(values);
    spec.keep_pinned = step_ == transaction_step::begin || step_ == transaction_step::inside;
    if (step_ == transaction_step::inside || step_ == transaction_step::end)
      spec.pinned = pinned_;
    spec.protocol = config::protocol::postgres_wire;
    spec.session.user = user_;
    spec.session.catalog = database_;
    spec.session.source = application_;
    spec.session.headers = params;
    statement_ = std::make_shared<statement_run>(
      node_, std::move(spec),
      [weak = weak_from_this(), node = node_,
       loop = conn_->loop().shared_from_this()](statement_page page) {
        loop->post([weak, node, page = std::move(page)]() mutable {
          if (auto self = weak.lock())
            self->on_page(page);
          else if (page.pinned) // the session is gone: end its transaction
            abandon_transaction(*node, *page.pinned);
        });
      });
    statement_->pull(rows_per_page);
  }

  /// Asks for the next page once the client has taken most of the last.
  void pull_next() {
    if (conn_->pending_output() < output_high_water)
      return statement_->pull(rows_per_page);
    conn_->when_drained([weak = weak_from_this()] {
      if (auto self = weak.lock(); self && self->statement_)
        self->statement_->pull(rows_per_page);
    });
  }

  /// Takes a transaction's connection back from its last statement.
  void take_pin(statement_page& page) {
    if (page.pinned)
      pinned_ = std::move(page.pinned);
    if (step_ == transaction_step::end)
      pinned_.reset(); // COMMIT or ROLLBACK released it
  }

  /// One page of the running statement into the session.
  void on_page(statement_page& page) {
    if (closed_) {
      if (page.pinned) // it finished as the client left
        abandon_transaction(*node_, *page.pinned);
      return;
    }
    if (closing_run_) // a suspended run read to its end for its connection
      return end_closing_run(page);
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
    // Cannot happen: the session only resumes what it suspended.
    session_.fail({"ERROR", "XX000", "the suspended portal was lost", ""});
  }

  /// Ends a suspended run. Inside a transaction it holds the block's
  /// connection, so it is read to its end to get that back; otherwise it
  /// is cancelled.
  void close_suspended() {
    if (fast_suspended_) { // in a block (only there): read to its end
      fast_suspended_ = false;
      draining_ = true;
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
        self->backend_->resume();
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

  std::shared_ptr<node_services> node_;
  std::shared_ptr<wire::connection> conn_;
  std::string cancel_key_; // "pid:secret" in the node's cancel registry
  pgwire::server_session session_;
  bool closed_ = false;
  bool logged_in_ = false;
  session_timers timers_{conn_->loop()};
  std::string user_;
  std::string database_;
  std::string application_;
  routing::route_request route_req_; // the session's part, kept

  transaction_step step_ = transaction_step::none;
  bool columns_sent_ = false;

  // The actor path.
  std::shared_ptr<statement_run> statement_; // running, if any
  std::shared_ptr<statement_run> suspended_; // stopped at a row limit
  bool closing_run_ = false;
  /// Between the statements of a transaction block: its connection.
  std::optional<pinned_connection> pinned_;

  // The fast lane.
  std::optional<fast_statement> fast_;
  std::shared_ptr<fast_lane_books> books_ = std::make_shared<fast_lane_books>(node_, "postgresWire", "pg_");
  engines::parameters params_;
  std::shared_ptr<engines::pg_async_connection> backend_;
  std::optional<fast_block<engines::pg_async_connection>> block_;
  bool block_lost_ = false;     // its connection failed: the client goes too
  bool fast_suspended_ = false; // at an Execute's row limit, the backend paused
  bool draining_ = false;       // the suspended run read to its end, unseen
};

} // namespace

std::shared_ptr<wire::handler>
make_pg_wire_session(std::shared_ptr<node_services> node,
                     std::shared_ptr<wire::connection> conn, int32_t process_id,
                     int32_t secret_key, bool tls_available,
                     std::chrono::milliseconds startup_timeout) {
  auto session = std::make_shared<pg_wire_session>(std::move(node), std::move(conn), process_id,
                                                   secret_key, tls_available);
  session->expect_login_within(startup_timeout);
  return session;
}

} // namespace qf
