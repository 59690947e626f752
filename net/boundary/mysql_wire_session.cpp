// MySQL wire sessions: login and KILL here; the statements on the fast
// lane or the actor path.
#include "net/boundary/mysql_wire_session.hpp"

#include "actors/data/query_registry.hpp"
#include "actors/data/statement_run.hpp"
#include "actors/node/node.hpp"
#include "engines/lane_pool.hpp"
#include "engines/mysql_async_connection.hpp"
#include "net/boundary/fast_lane.hpp"
#include "net/boundary/session_output.hpp"
#include "net/boundary/session_timers.hpp"
#include "protocols/common/secrets.hpp"
#include "protocols/mysqlwire/session.hpp"

#include <optional>
#include <utility>

namespace qf {

namespace {

using sql::transaction_step;

constexpr uint32_t rows_per_page = 4096;

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

class mysql_wire_session : public wire::handler,
                           public engines::mysql_async_listener,
                           public std::enable_shared_from_this<mysql_wire_session> {
public:
  mysql_wire_session(std::shared_ptr<node_services> node, std::shared_ptr<wire::connection> conn,
                     uint32_t connection_id, std::string scramble, bool tls_available)
    : node_(std::move(node)),
      conn_(std::move(conn)),
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

  /// On the loop's thread (session_timers::arm_login).
  void expect_login_within(std::chrono::milliseconds timeout) {
    timers_.arm_login(timeout, [weak = weak_from_this()] {
      if (auto self = weak.lock(); self && !self->closed_ && !self->logged_in_)
        self->conn_->close();
    });
  }

  /// The greeting.
  void start() {
    flush_output();
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

  /// The client went away: its statement is cancelled, its slot freed.
  void on_closed() override {
    closed_ = true;
    timers_.cancel_all();
    if (!kill_key_.empty())
      node_->wire_sessions->remove(std::exchange(kill_key_, {}));
    if (auto run = std::exchange(statement_, nullptr))
      run->cancel(true); // rolling back an open transaction
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
    session_.columns(cols);
  }

  bool on_rows(row_batch& rows) override {
    if (!fast_) // the statement ended while its rows were on their way
      return false;
    fast_->rows += static_cast<int64_t>(rows.rows());
    session_.rows(rows);
    return stream_on();
  }

  void on_done(int64_t affected_rows) override {
    finish_fast("Success", {});
    session_.server_in_transaction(block_.has_value());
    session_.complete(affected_rows);
    pump();
  }

  void on_failed(const engines::engine_error& e) override {
    bool cancelled = e.kind() == engines::error_kind::cancelled;
    finish_fast(cancelled ? "Cancelled" : "Failed", e.what());
    session_.server_in_transaction(block_.has_value()); // a deadlock rolled it back
    session_.fail(error_for(e));
    pump();
  }

private:
  static mysqlwire::session_options options(uint32_t connection_id, const std::string& scramble,
                                            bool tls_available) {
    mysqlwire::session_options opts{connection_id, scramble};
    opts.tls_available = tls_available;
    return opts;
  }

  bool busy() const {
    return statement_ || fast_;
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
    if (!busy())
      flush_output(); // else it goes with the statement's answer
    if (session_.closing() || block_lost_) {
      conn_->close();
      return;
    }
    if (!busy())
      conn_->read_more();
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
      [weak] { cancel(weak, {}, true); });
    session_.accept();
    logged_in_ = true;
    timers_.logged_in();
  }

  void kill(const mysqlwire::kill_event& ev) {
    auto key = kill_key(ev.connection_id, user_);
    bool found = ev.query_only ? node_->wire_sessions->cancel(key)
                               : node_->wire_sessions->close(key);
    if (!found) {
      session_.fail({1094, "HY000", "Unknown thread id: " + std::to_string(ev.connection_id)});
      return;
    }
    session_.complete(0);
  }

  /// Cancels the session's running statement from any thread (with an id,
  /// only while that fast-lane statement runs), and closes it when asked.
  static void cancel(const std::weak_ptr<mysql_wire_session>& weak, const std::string& id,
                     bool close) {
    auto self = weak.lock();
    if (!self)
      return;
    self->conn_->loop().post([weak, id, close] {
      auto session = weak.lock();
      if (!session || session->closed_
          || (!id.empty() && !(session->fast_ && session->fast_->id == id)))
        return;
      if (session->statement_)
        session->statement_->cancel(false);
      else if (session->backend_)
        session->backend_->cancel();
      else if (session->fast_) // its connection is still opening
        session->fast_->cancelled = true;
      if (close)
        session->conn_->close();
    });
  }

  // -- statements -------------------------------------------------------------

  void run(mysqlwire::query_event& ev) {
    step_ = ev.step;
    if (!run_fast(ev))
      run_on_actors(std::move(ev.sql), std::move(ev.params));
  }

  /// Admits and starts the statement on the fast lane; false when it must
  /// take the actor path (nothing was taken then).
  bool run_fast(mysqlwire::query_event& ev) {
    if (pinned_)
      return false; // the actor path holds the block
    if (block_)
      return run_in_block(ev);
    // Outside any block (a step inside one whose server ended it, as a
    // deadlock does): run as the server would, in autocommit.
    auto active = node_->snapshot->load();
    if (!active)
      return false;
    route_req_.sql = std::move(ev.sql);
    auto route = active->routes->route(route_req_);
    ev.sql = std::move(route_req_.sql);
    if (route.denied)
      return false;
    auto gate = active->group_gates.find(route.group);
    if (gate == active->group_gates.end() || !gate->second->mysql_only())
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
    books_->set_catalog(session_.database());
    node_->in_flight.fetch_add(1); // before it leaves: a drain waits for it
    auto idle = st.cluster->mysql_lane->take(conn_->loop());
    bool started = idle != nullptr;
    if (started)
      start_backend(std::move(idle));
    books_->admitted(st);
    if (started)
      return true;
    st.cluster->mysql_lane->fetch(
      conn_->loop(),
      [weak = weak_from_this(), lane = st.cluster->mysql_lane](
        std::shared_ptr<engines::mysql_async_connection> conn, std::string error) {
        auto self = weak.lock();
        if (!self || self->closed_ || !self->fast_) { // nobody waits for it
          lane->give_back(std::move(conn));
          return;
        }
        if (self->fast_->cancelled) { // before it ever reached the server
          lane->give_back(std::move(conn));
          self->on_failed(engines::engine_error(engines::error_kind::cancelled,
                                                "Query execution was interrupted"));
          return;
        }
        if (!conn) {
          self->on_failed(engines::engine_error(engines::error_kind::internal, error));
          return;
        }
        self->start_backend(std::move(conn));
      });
    return true;
  }

  /// The next statement of a block on the fast lane: on the block's
  /// connection, under the slot it holds, neither routed nor admitted.
  bool run_in_block(mysqlwire::query_event& ev) {
    std::shared_ptr<engines::mysql_async_connection> conn;
    fast_ = block_->next(std::move(ev.sql), conn);
    params_ = std::move(ev.params);
    books_->set_catalog(session_.database());
    node_->in_flight.fetch_add(1);
    start_backend(std::move(conn));
    books_->admitted(*fast_);
    return true;
  }

  void start_backend(std::shared_ptr<engines::mysql_async_connection> conn) {
    backend_ = std::move(conn);
    backend_->run(fast_->sql, params_, shared_from_this());
  }

  /// After rows were added: false pauses the backend (session_output).
  bool stream_on() {
    return qf::stream_on(session_, *conn_, [weak = weak_from_this()] {
      if (auto self = weak.lock(); self && self->backend_)
        self->backend_->resume();
    });
  }

  /// The fast statement ended: connection back to the pool and slot freed
  /// at once, unless its status flags say a transaction goes on
  /// (settle_connection); the query recorded once the answers ready now
  /// went out.
  void finish_fast(std::string status, std::string error) {
    auto& lane = *fast_->cluster->mysql_lane;
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
  /// transaction is gone, and so goes the client, as MariaDB closes an
  /// idle one at wait_timeout. Its slot is freed now, not when the client
  /// next speaks.
  void block_hung_up(const void* which) {
    if (!closed_ && !busy() && block_ && block_->conn.get() == which)
      conn_->close();
  }

  void run_on_actors(std::string sql, engines::parameters values) {
    statement_spec spec;
    spec.ticket = node_->next_ticket.fetch_add(1);
    spec.id = node_->query_id(spec.ticket, "my_");
    spec.sql = std::move(sql);
    spec.params = std::move(values);
    spec.keep_pinned = step_ == transaction_step::begin || step_ == transaction_step::inside;
    if (step_ == transaction_step::inside || step_ == transaction_step::end)
      spec.pinned = pinned_;
    spec.protocol = config::protocol::mysql_wire;
    spec.session.user = user_;
    spec.session.catalog = session_.database();
    columns_sent_ = false;
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

  /// Takes a transaction's connection back from its last statement.
  void take_pin(statement_page& page) {
    if (page.pinned)
      pinned_ = std::move(page.pinned);
    if (step_ == transaction_step::end)
      pinned_.reset(); // COMMIT or ROLLBACK released it
  }

  /// One page of the running statement into the session.
  void on_page(statement_page& page) {
    if (closed_ || !statement_) {
      if (page.pinned) // it finished as the client left
        abandon_transaction(*node_, *page.pinned);
      return;
    }
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
    if (conn_->pending_output() < output_high_water)
      return statement_->pull(rows_per_page);
    conn_->when_drained([weak = weak_from_this()] {
      if (auto self = weak.lock(); self && self->statement_)
        self->statement_->pull(rows_per_page);
    });
  }

  std::shared_ptr<node_services> node_;
  std::shared_ptr<wire::connection> conn_;
  const uint32_t connection_id_;
  const std::string scramble_;
  mysqlwire::server_session session_;
  bool closed_ = false;
  bool logged_in_ = false;
  session_timers timers_{conn_->loop()};
  std::string user_;
  std::string kill_key_; // registered once logged in
  routing::route_request route_req_; // the session's part, kept

  // The actor path.
  std::shared_ptr<statement_run> statement_; // running, if any
  bool columns_sent_ = false;
  transaction_step step_ = transaction_step::none; // the running statement's
  std::optional<pinned_connection> pinned_;        // an open block's connection and slot

  // The fast lane.
  std::optional<fast_statement> fast_;
  std::shared_ptr<fast_lane_books> books_
    = std::make_shared<fast_lane_books>(node_, "mysqlWire", "my_");
  engines::parameters params_;
  std::shared_ptr<engines::mysql_async_connection> backend_;
  std::optional<fast_block<engines::mysql_async_connection>> block_;
  bool block_lost_ = false; // its connection failed: the client goes too
};

} // namespace

std::shared_ptr<wire::handler>
make_mysql_wire_session(std::shared_ptr<node_services> node,
                        std::shared_ptr<wire::connection> conn, uint32_t connection_id,
                        std::string scramble, bool tls_available,
                        std::chrono::milliseconds startup_timeout) {
  auto session = std::make_shared<mysql_wire_session>(std::move(node), std::move(conn),
                                                      connection_id, std::move(scramble),
                                                      tls_available);
  session->start();
  session->expect_login_within(startup_timeout);
  return session;
}

} // namespace qf
