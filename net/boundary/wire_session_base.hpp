// What the PostgreSQL and MySQL wire sessions share around their protocol
// state machines: the socket's guards (login timeout, hang-up), cancel
// from other threads, and the fast lane's round of a statement: a backend
// connection taken or fetched, the statement settled and recorded, a
// parked block's hang-up, the lane closed with the client.
//
// Derived (CRTP, befriending this base) has `session_` and provides:
// pump(), which hands the state machine's events over; on_page(page), the
// actor path's; busy(); holds_a_portal(), a statement suspended between
// the client's Executes; start_backend(conn); finish_fast(status, error),
// which calls settle_fast(); on_failed(error); say_transaction_lost(code,
// why), what its client reads before a lost block closes it;
// actor_statement(sql, params), a statement_spec for the actor path, whose
// on_page() first offers the page to take_admission(); and the statics
// lane_serves(gate), lane_of(cluster), cancelled_error(),
// connect_error(why) and pinned_out_error(why). Backend has settings() and
// settings_now(), the SETs its server session has.
//
// Its member functions are defined here and in four parts: waiting for a
// slot (wire_session_waiting.hpp), the client's own server-session state
// (wire_session_state.hpp), the fast lane's backend connections
// (wire_session_backends.hpp), and ends from outside, cancel and the client
// gone (wire_session_ending.hpp).
#pragma once

#include "actors/data/group_gate.hpp"
#include "actors/data/statement_run.hpp"
#include "actors/node/node.hpp"
#include "engines/lane_pool.hpp"
#include "net/boundary/fast_lane.hpp"
#include "net/boundary/session_output.hpp"
#include "net/boundary/session_timers.hpp"
#include "net/wire/tcp_server.hpp"
#include "protocols/sql/session_settings.hpp"
#include "protocols/sql/statements.hpp"
#include "protocols/sql/transactions.hpp"
#include "protocols/trino/query_results.hpp"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace qf {

/// How many rows a page of the actor path carries.
inline constexpr uint32_t rows_per_page = 4096;

/// What hears the replay of a session's SETs on its statement's connection
/// (the derived give_settings()), and tells the session how it went.
template <class Listener, class Session>
struct settings_replay : Listener {
  explicit settings_replay(std::weak_ptr<Session> s) : session(std::move(s)) {
    // nop
  }
  void on_columns(std::vector<column>) override {}
  bool on_rows(row_batch&) override {
    return true;
  }
  void on_done(int64_t) override {
    if (auto s = session.lock())
      s->settings_given(nullptr);
  }
  void on_failed(const engines::engine_error& e) override {
    if (auto s = session.lock())
      s->settings_given(&e);
  }
  std::weak_ptr<Session> session;
};

template <class Derived, class Backend>
class wire_session_base : public wire::handler {
  template <class, class>
  friend struct settings_replay;

  /// The SETs a session keeps and its connections are given: PostgreSQL's
  /// or MySQL's (sql::session_settings, sql::mysql_variables).
  using settings_type = std::remove_cvref_t<decltype(std::declval<Backend&>().settings())>;

public:
  /// On the loop's thread: the login deadline runs from now.
  void start_timers(const wire_session_limits& limits) {
    limits_ = limits;
    timers_.arm_login(limits.startup_timeout, [weak = weak_self()] {
      if (auto self = weak.lock(); self && !self->closed_ && !self->logged_in_)
        self->conn_->close();
    });
  }

  void on_data(std::string_view bytes) override {
    if (timers_.idle_block_armed())
      timers_.idle_block_ended(); // the client spoke
    self().session_.feed(bytes);
    self().pump();
  }

  void on_tls_ready() override {
    self().session_.tls_started();
    self().pump();
  }

  /// The client hung up while a statement ran (session_timers::arm_hang_up).
  void on_hang_up() override {
    timers_.arm_hang_up([weak = weak_self()] {
      if (auto self = weak.lock(); self && !self->closed_ && self->busy())
        self->conn_->close();
    });
  }

protected:
  /// A statement waiting for a slot (wait_for_slot).
  struct queued_statement {
    std::string id;
    std::string sql;
    engines::parameters params;
    routing::decision route;
    std::chrono::steady_clock::time_point since;
    int64_t since_wall_ms;
    bool in_lane = false; // its wait is nobody else's to count
  };

  /// A statement waiting in its group gate's lane (wait_in_lane).
  struct lane_wait {
    uint64_t ticket;
    std::shared_ptr<group_gate> gate;
    std::string only_cluster;
    std::optional<io::event_loop::timer> timer;
  };

  wire_session_base(std::shared_ptr<node_services> node, std::shared_ptr<wire::connection> conn,
                    config::protocol protocol, const char* id_prefix)
    : node_(std::move(node)),
      conn_(std::move(conn)),
      protocol_(protocol),
      id_prefix_(id_prefix),
      books_(std::make_shared<fast_lane_books>(node_, std::string{config::to_string(protocol)},
                                               id_prefix)) {
    // nop
  }

  Derived& self() {
    return static_cast<Derived&>(*this);
  }

  std::weak_ptr<Derived> weak_self() {
    return self().weak_from_this();
  }

  /// Cancels the session's running statement from any thread (with an id,
  /// only while that fast-lane statement runs), and closes it when asked.
  /// `closed`, if given, is called once the connection is closed (KILL
  /// CONNECTION answers then), or once there is none to close.
  static void cancel(const std::weak_ptr<Derived>& weak, const std::string& id, bool close,
                     std::function<void()> closed = {});

  /// Sends what the state machine wrote.
  void flush_output() {
    qf::flush_output(self().session_, *conn_);
  }

  /// After rows were added: false pauses the backend (session_output).
  bool stream_on() {
    return qf::stream_on(self().session_, *conn_, [weak = weak_self()] {
      if (auto self = weak.lock(); self && self->backend_)
        self->backend_->resume(self.get());
    });
  }

  /// Routes and admits a statement outside any block for the fast lane,
  /// and starts it there, or, when its group has no slot free, waits in
  /// the group's queue and starts once admitted (wait_for_slot). False
  /// when it must take the actor path (nothing was taken then: `text` and
  /// `params` are still the caller's).
  bool start_fast(std::string& text, engines::parameters& params) {
    auto active = node_->snapshot->load();
    if (!active)
      return false;
    route_req_.sql = std::move(text);
    auto route = active->routes->route(route_req_);
    text = std::move(route_req_.sql);
    if (route.denied)
      return false;
    auto gate = active->group_gates.find(route.group);
    if (gate == active->group_gates.end() || !Derived::lane_serves(*gate->second))
      return false;
    auto own = kept_cluster_in(*gate->second);
    auto cluster = own ? gate->second->try_place_newcomer_on(own->name)
                       : gate->second->try_place_newcomer(route_req_.user);
    if (!cluster)
      wait_for_slot(std::move(text), std::move(params), std::move(route),
                    own ? own->name : std::string{}, gate->second);
    else
      begin_fast(std::move(text), std::move(params), std::move(route), std::move(cluster));
    return true;
  }

  /// Whether the statement would run on this session's fast lane: its
  /// route's group is all of the lane's engine.
  bool lane_would_run(std::string_view sql) {
    auto active = node_->snapshot->load();
    if (!active)
      return false;
    route_req_.sql.assign(sql);
    auto route = active->routes->route(route_req_);
    if (route.denied)
      return false;
    auto gate = active->group_gates.find(route.group);
    return gate != active->group_gates.end() && Derived::lane_serves(*gate->second);
  }

  /// The statement holds a slot on `cluster` (after waiting for it, if
  /// `queued`): it leaves first, the bookkeeping follows while the server
  /// works (the backend reports nothing from inside its run).
  void begin_fast(std::string text, engines::parameters params, routing::decision route,
                  std::shared_ptr<cluster_state> cluster, const queued_statement* queued = nullptr) {
    fast_.emplace();
    auto& st = *fast_;
    st.sql = std::move(text);
    st.route = std::move(route);
    st.cluster = std::move(cluster);
    if (queued) {
      st.id = queued->id; // the id its wait was shown and cancellable under
      st.created = queued->since;
      st.created_wall_ms = queued->since_wall_ms;
      st.queued_ms = ms_between(queued->since, io::round_clock::steady());
      st.waited_in_lane = queued->in_lane;
    }
    if (settings_resets_ != self().session_.session_resets()) { // DISCARD ALL
      settings_.discard();
      settings_resets_ = self().session_.session_resets();
    }
    self().settings_follow_session();
    note_session_effect(st);
    params_ = std::move(params);
    node_->in_flight.fetch_add(1); // before it leaves: a drain waits for it
    take_backend();
    books_->admitted(st);
  }

  /// What the statement does to its client's server session: a SET outside
  /// a block the session keeps and replays (tracks), or state that keeps
  /// its connection for the client (pins). Per statement: one keyword
  /// read tells most of them apart.
  static void note_session_effect(fast_statement& st) {
    auto kw = sql::leading_keyword(st.sql);
    bool setting = kw == "SET" || kw == "RESET" || kw == "USE"; // MySQL's USE
    st.tracks = setting && !st.in_block && settings_type::replayable(st.sql);
    st.pins = !st.tracks
              && ((setting && sql::changes_session_setting(st.sql))
                  || sql::leaves_session_state(st.sql));
    st.follows_previous = !st.in_block && Derived::reads_previous_statements_state(st.sql, kw);
    st.leaves_state_behind = Derived::may_leave_state_behind(st.sql, kw);
    if constexpr (Derived::pipelines_statements)
      st.plain = kw == "SELECT" && st.cluster->pipeline_depth > 1 // read only where it pays
                 && !st.in_block && !st.pins && !st.tracks && !st.follows_previous
                 && !sql::contains_ignoring_case(st.sql, "into") && !sql::may_lock_rows(st.sql)
                 && sql::calls_only_pure_functions(st.sql);
  }

  /// No slot free: the statement waits in its group's queue, in order with
  /// everyone else's (the actor path's too), with the group's limits on the
  /// wait; an admission-only statement actor waits there for it and hands
  /// the slot over (take_admission). Cancel and hang-up reach it as any
  /// statement on the actor path. A session whose own state lives on a
  /// connection waits for that connection's cluster.
  void wait_for_slot(std::string text, engines::parameters params, routing::decision route,
                     std::string only_cluster, const std::shared_ptr<group_gate>& gate);

  void wait_on_actors(std::string text, engines::parameters params, routing::decision route,
                      std::string only_cluster);

  /// A page of the statement that waits for a slot: true when it brought
  /// the slot and the statement started on the fast lane. Its failure
  /// (queue full, timed out, cancelled) is the caller's to answer.
  bool take_admission(statement_page& page);

  /// While nobody waits on the actor path: the statement waits in the
  /// gate's lane, handed a slot by whoever frees one (no thread woken when
  /// that is a statement of this loop). Its wait ends as an actor-path
  /// wait would: a slot (take_admission), the group's capacityWaitTimeout,
  /// a cancel, its client gone. False: it waits on the actor path.
  bool wait_in_lane(std::string& text, engines::parameters& params, routing::decision& route,
                    const std::string& only_cluster, const std::shared_ptr<group_gate>& gate);

  /// The lane handed the statement a slot (or, with null, its group was
  /// replaced: it waits on the actor path now).
  void lane_ended(std::shared_ptr<cluster_state> slot);

  /// Ends the lane's wait without a slot (timed out, cancelled): the
  /// client gets the error an actor-path wait gives. Nothing when the
  /// slot is on its way already (lane_ended takes it).
  void leave_lane(const char* status, const trino::error_code& code, std::string message);

  void stop_lane_timer();

  /// A page nobody takes any more (its session is gone): the transaction's
  /// connection or the slot it carries goes back.
  static void drop_page(node_services& node, statement_page& page) {
    if (page.pinned)
      abandon_transaction(node, *page.pinned);
    if (page.admitted)
      page.admitted->release();
  }

  /// The next statement of a block on the fast lane: on the block's
  /// connection, under the slot it holds, neither routed nor admitted.
  void start_in_block(std::string text, engines::parameters params) {
    std::shared_ptr<Backend> conn;
    fast_ = block_->next(std::move(text), conn);
    note_session_effect(*fast_);
    params_ = std::move(params);
    node_->in_flight.fetch_add(1);
    if (fast_->pins && !conn->holds_private_state() && !pin(*fast_))
      backend_ = std::move(conn); // back to the block as the refusal settles
    else
      self().start_backend(std::move(conn));
    books_->admitted(*fast_);
  }

  /// The admitted statement starts on an idle connection of this loop, or
  /// once one is fetched (moved from another loop, or opened).
  void take_backend();

  /// Whether the statement started behind others' on a connection that
  /// runs them: never, but where Derived pipelines.
  template <class Lane>
  bool joined_a_pipeline(Lane&) {
    return false;
  }

  /// The connection this session's last statement that may have left
  /// state there ran on (Derived::may_leave_state_behind: PostgreSQL's
  /// sequences advanced), if no other client's statement that may have
  /// left its own ran there since; else the statement fails (Derived's
  /// previous_connection_gone_error()).
  template <class Lane>
  void take_previous_backend(Lane& lane);

  /// The replay of the session's SETs on its statement's connection (the
  /// derived give_settings()) ended: the statement starts there, or fails
  /// with the replay's error.
  void settings_given(const engines::engine_error* error) {
    if (closed_ || !fast_ || !backend_)
      return;
    if (error)
      return self().on_failed(*error);
    backend_->settings_now(giving_.after_prelude(backend_->settings()));
    self().start_backend(std::exchange(backend_, nullptr));
  }

  /// Whether the statement's connection is to be given this session's
  /// settings first (the derived give_settings() runs prelude_; a MySQL
  /// connection may take two steps, its USE and its SET). For a SET or
  /// RESET the session keeps, they are the settings as they will be after
  /// it: a client whose replay fails (a role dropped since it SET it) gets
  /// out with RESET ROLE.
  bool needs_replay(const Backend& conn);

  /// A statement about to keep a connection for its client takes one of
  /// its cluster's maxPinnedSessions; with none left it is refused, from
  /// the loop (not inside the pump that started it), before it runs: so
  /// clients that pin connections cannot take the server's last ones from
  /// everyone else.
  bool pin(fast_statement& st);

  /// The fast statement ended: connection back to the pool and slot freed
  /// at once, unless the server says a block goes on (settle_connection);
  /// the query recorded once the answers ready now went out.
  void settle_fast(std::string status, std::string error);

  /// A statement for the actor path, in the session's transaction as its
  /// step says.
  statement_spec actor_spec(std::string text, engines::parameters values) const {
    statement_spec spec;
    spec.ticket = node_->next_ticket.fetch_add(1);
    spec.id = node_->query_id(spec.ticket, id_prefix_);
    spec.sql = std::move(text);
    spec.params = std::move(values);
    spec.keep_pinned = step_ == sql::transaction_step::begin
                       || step_ == sql::transaction_step::inside;
    if (step_ == sql::transaction_step::inside || step_ == sql::transaction_step::end)
      spec.pinned = pinned_;
    spec.protocol = protocol_;
    return spec;
  }

  /// Runs the statement on the actor path; its pages come back on this
  /// loop, to on_page().
  void start_on_actors(statement_spec spec) {
    statement_ = std::make_shared<statement_run>(
      node_, std::move(spec),
      [weak = weak_self(), node = node_,
       loop = conn_->loop().shared_from_this()](statement_page page) {
        loop->post([weak, node, page = std::move(page)]() mutable {
          if (auto self = weak.lock())
            self->on_page(page);
          else
            drop_page(*node, page);
        });
      });
    statement_->pull(rows_per_page);
  }

  /// Asks for the next page once the client has taken most of the last.
  void pull_next() {
    if (conn_->pending_output() < output_high_water)
      return statement_->pull(rows_per_page);
    conn_->when_drained([weak = weak_self()] {
      if (auto self = weak.lock(); self && self->statement_)
        self->statement_->pull(rows_per_page);
    });
  }

  /// Takes a transaction's connection back from its last statement.
  void take_pin(statement_page& page) {
    if (page.pinned)
      pinned_ = std::move(page.pinned);
    if (step_ == sql::transaction_step::end)
      pinned_.reset(); // COMMIT or ROLLBACK released it
  }

  /// Tells the listener whether the session may be closed to make room
  /// for a newcomer at maxConnections: nothing in flight, and nothing of
  /// the client's held on a server (a transaction block, a connection
  /// kept for its session state). A session not logged in yet may be,
  /// and goes before any that is. Called at the end of each pump.
  void publish_idleness() {
    conn_->set_idle(!closed_ && !self().busy() && !self().holds_a_portal() && !fast_ && !block_
                      && !pinned_ && !private_backend_,
                    logged_in_);
  }

  /// Idle with a transaction block open (on the fast lane or the actor
  /// path's pinned connection): unless the client speaks within the
  /// frontend's idleTransactionTimeout, the session ends, which rolls the
  /// block back and frees its slot. Called once the session is idle.
  void watch_idle_block() {
    if (limits_.idle_transaction_timeout.count() <= 0 || closed_ || self().busy()
        || (!block_ && !pinned_) || timers_.idle_block_armed())
      return;
    timers_.arm_idle_block(limits_.idle_transaction_timeout, [weak = weak_self()] {
      auto self = weak.lock();
      if (!self)
        return;
      self->timers_.idle_block_ended();
      if (self->closed_ || self->busy() || (!self->block_ && !self->pinned_))
        return;
      self->say_transaction_lost("25P03",
                                 "terminating connection due to idle-in-transaction timeout");
      self->conn_->close();
    });
  }

  /// The client's statement left state of its own in the server's session
  /// (sql::leaves_session_state): the connection stays with this session,
  /// never pooled, and its next statements on that cluster run there, as
  /// ProxySQL stops multiplexing such a client. One at a time: a second
  /// (another cluster's) replaces it.
  void keep_private_backend(std::shared_ptr<Backend> own);

  /// The cluster of the session's kept connection when it is a member of
  /// this group: the statement must run there to see the client's state.
  /// A connection its client reset, that broke, or whose cluster left
  /// service is let go (its state is lost, as when a server restarts).
  std::shared_ptr<cluster_state> kept_cluster_in(const group_gate& gate);

  /// The kept connection, if this statement runs on its cluster. A client
  /// that reset its session (DISCARD ALL, COM_RESET_CONNECTION) lets it go.
  std::shared_ptr<Backend> take_private_backend();

  /// The client went away (its statement on the actor path cancelled
  /// already): an open block rolls back, on the actor path's pinned
  /// connection or the fast lane's (which closes), and the fast statement
  /// is cancelled; their slots are freed.
  void let_backends_go();

  std::shared_ptr<node_services> node_;
  std::shared_ptr<wire::connection> conn_;
  bool closed_ = false;
  bool logged_in_ = false;
  session_timers timers_{conn_->loop()};
  wire_session_limits limits_;
  routing::route_request route_req_; // the session's part, kept
  const config::protocol protocol_;
  const char* const id_prefix_;

  // The actor path.
  sql::transaction_step step_ = sql::transaction_step::none; // the running statement's
  std::shared_ptr<statement_run> statement_; // running, if any
  /// Between the statements of a transaction block: its connection.
  std::optional<pinned_connection> pinned_;

  // The fast lane.
  /// A statement waiting for a slot (wait_for_slot): statement_ waits for
  /// it, or it waits in the gate's lane (lane_).
  std::optional<queued_statement> waiting_;
  std::optional<lane_wait> lane_;
  std::optional<fast_statement> fast_;
  /// Its SETs, given to each connection its statements get.
  settings_type settings_;
  settings_type giving_; // needs_replay()'s, until the replay ends
  std::string prelude_;  // what gives them, the replay's statement
  uint64_t settings_resets_ = 0;
  std::shared_ptr<fast_lane_books> books_;
  std::shared_ptr<Backend> private_backend_; // see keep_private_backend()
  std::shared_ptr<cluster_state> private_cluster_;
  uint64_t private_resets_ = 0;
  uint64_t state_resets_ = 0; // the client's resets when it last left state on a connection
  engines::parameters params_;
  std::shared_ptr<Backend> backend_;
  // Where the session's last fast statement that may have left state
  // behind ran (take_previous_backend).
  std::weak_ptr<Backend> previous_backend_;
  std::optional<fast_block<Backend>> block_;
  bool block_lost_ = false; // its connection failed: the client goes too

private:
  /// The server hung up the connection parked in the block between its
  /// statements (`which`, unless a statement took it since): the
  /// transaction is gone, and so goes the client, as PostgreSQL ends a
  /// session at idle_in_transaction_session_timeout and MariaDB one at
  /// wait_timeout. Its slot is freed now, not when the client next speaks.
  void block_hung_up(const void* which) {
    if (closed_ || self().busy() || !block_ || block_->conn.get() != which)
      return;
    self().say_transaction_lost("08006",
                                "the server closed this transaction's connection (its "
                                "idle_in_transaction_session_timeout, or the backend was "
                                "terminated): the transaction is rolled back");
    conn_->close();
  }
};

} // namespace qf

// The member functions defined apart (see the top).
#include "net/boundary/wire_session_backends.hpp"
#include "net/boundary/wire_session_ending.hpp"
#include "net/boundary/wire_session_state.hpp"
#include "net/boundary/wire_session_waiting.hpp"
