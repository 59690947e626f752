// A libpq connection in non-blocking mode, driven by readiness on the
// event loop it was opened on: the wire thread's, which serves every
// session that borrows it. It has no thread of its own: the statement goes out and
// its rows come back on the thread the client's socket is served on, which
// is what lets PostgreSQL clients through QueryFlux keep pace with a
// pooler (see docs/performance.md).
#pragma once

#include "engines/client_state.hpp"
#include "engines/engine.hpp"
#include "io/event_loop.hpp"
#include "protocols/pgwire/relay.hpp"
#include "protocols/pgwire/server_statements.hpp"
#include "protocols/sql/session_settings.hpp"

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

struct pg_conn;
struct pg_result;

namespace qf::engines {

/// What a run reports, on the connection's loop.
class pg_async_listener {
public:
  virtual ~pg_async_listener() = default;
  /// The server's notice, as libpq read it (a run, not a relay: a relay's
  /// notices are among its bytes), before the rows it preceded.
  virtual void on_notice(const notice& n) = 0;
  /// Once per run, before its rows (also when there are none).
  virtual void on_columns(std::vector<column> cols) = 0;
  /// Some rows; return false to pause reading until resume().
  virtual bool on_rows(row_batch& rows) = 0;
  virtual void on_done(int64_t affected_rows) = 0;
  /// The run failed (for a relay: the connection was lost).
  virtual void on_failed(const engine_error& e) = 0;

  // A relayed run (relay()) reports these instead of columns/rows/done:
  /// The server's messages up to ReadyForQuery, whole; false to pause
  /// reading until resume().
  virtual bool on_relayed(std::string_view messages) = 0;
  /// ReadyForQuery came. error: the server's ErrorResponse, which was
  /// among the relayed messages.
  virtual void on_relay_done(int64_t data_rows, const engine_error* error) = 0;

  /// The server waits for COPY FROM STDIN's data. True: the listener takes
  /// the CopyInResponse, relayed next, and forwards the client's CopyData
  /// up to its CopyDone or CopyFail (copy_forward()); the server's answer
  /// is relayed as any other. False: the copy is refused (0A000).
  virtual bool on_copy_in() {
    return false;
  }
  /// The forwarded copy data that waited for the server went; more may
  /// follow. Never from inside copy_forward().
  virtual void on_copy_drained() {}

  /// A relay that waited behind others' on the connection (relay_behind())
  /// was taken off it before its answer began: the statement ahead of it
  /// ran past pipeline_patience, its client stopped reading, or the
  /// connection was lost or cancelled. Its statement is to run elsewhere;
  /// whatever this connection answers for it is dropped (a plain
  /// statement: running it twice changes nothing).
  /// The same relay was taken off, told at once from inside the
  /// connection (on_relay_moved() follows from the loop): the listener
  /// lets go of the connection now and calls nothing on it, which may
  /// serve another client before the loop comes round.
  virtual void on_relay_detached() {}
  virtual void on_relay_moved() {
    on_failed(engine_error(error_kind::internal,
                           "the statement's connection to PostgreSQL stalled", "08006"));
  }
};

class pg_async_connection : public io::watcher,
                            public client_state<sql::session_settings>,
                            public std::enable_shared_from_this<pg_async_connection> {
public:
  using opened
    = std::function<void(std::shared_ptr<pg_async_connection>, std::string error)>;

  /// Connects without blocking; `done` runs on the loop's thread with the
  /// connection, or null and libpq's reason, at the latest after
  /// `timeout`. Call on that thread.
  static void open(const std::string& conninfo, io::event_loop& on, opened done,
                   std::chrono::milliseconds timeout = connect_timeout);

  /// Takes a connected libpq connection; call start() before a run.
  pg_async_connection(pg_conn* conn, io::event_loop& on);
  ~pg_async_connection() override;

  pg_async_connection(const pg_async_connection&) = delete;
  pg_async_connection& operator=(const pg_async_connection&) = delete;

  /// Runs one statement; its events go to `to`, never from inside run()
  /// or relay(). One run at a time.
  void run(const std::string& sql, const parameters& params,
           std::shared_ptr<pg_async_listener> to, const std::vector<uint32_t>& param_types = {});

  /// Sends `sql` as a simple Query and hands back the server's answer as
  /// bytes, unparsed (but for counting DataRows and reading an error): for
  /// a PostgreSQL client, whose messages these already are. Without TLS to
  /// the server only (relay_capable()), since the bytes pass beside libpq.
  /// position_shift: where `sql` starts in its client's text, in
  /// characters, for the position of an error (relay_messages()).
  /// plain: the statement leaves nothing on the connection (a SELECT of
  /// no function), so others may be relayed behind it.
  void relay(const std::string& sql, std::shared_ptr<pg_async_listener> to,
             int32_t position_shift = 0, bool plain = false);
  // -- pipelining: plain statements relayed behind others -------------------
  // PostgreSQL reads a connection's messages in order and answers each
  // Query in turn: a client's plain statement (it leaves nothing on the
  // connection, and running it twice changes nothing) may go out while
  // another's runs, and the server takes it up without sleeping in
  // between (docs/performance.md, "Session 16").

  /// Where the connection goes back to once a pipeline ends with an
  /// answer nobody heard (no session holds it then to give it back).
  void home(std::function<void(std::shared_ptr<pg_async_connection>)> give_back) {
    home_ = std::move(give_back);
  }
  bool has_home() const {
    return home_ != nullptr;
  }

  /// A relay that others may queue behind runs here (listed by the lane
  /// pool while it does).
  bool pipelining() const {
    return relaying_ && pipelined_ && !broken_;
  }
  /// Whether relay_behind() may queue one more now: fewer than `depth` run
  /// or wait here, the running one started less than pipeline_join_window
  /// ago (one that runs long takes nobody more), relays here typically
  /// take less than pipeline_typical_run_limit (statements of several
  /// milliseconds run side by side on a server's cores faster than in turn
  /// on one backend; the limit is above what a busy machine adds to a
  /// point query's round trip), and it is not paused.
  bool takes_more_behind(size_t depth) const;
  /// relay() of a plain statement behind those running here: the Query goes
  /// out now, its answer comes to `to` after theirs, unless it is moved
  /// (on_relay_moved()).
  void relay_behind(const std::string& sql, std::shared_ptr<pg_async_listener> to,
                    int32_t position_shift = 0);
  /// How long a running statement is waited for before those behind it
  /// are moved elsewhere: a few times what a plain statement takes.
  static constexpr std::chrono::milliseconds default_pipeline_patience{10};
  void pipeline_patience(std::chrono::milliseconds patience) {
    patience_ = patience;
  }
  static constexpr std::chrono::microseconds pipeline_join_window{1000};
  static constexpr std::chrono::milliseconds pipeline_typical_run_limit{4};

  /// The same for a client's Execute: the statement goes out in the
  /// extended protocol (pgwire::extended_messages), and the server's
  /// answer, but for ParseComplete and BindComplete, comes back as bytes.
  /// A `prepared` statement (the client named it) is kept prepared on
  /// this connection (pgwire::server_statements), so that the server
  /// plans it once; any other goes as the unnamed statement.
  /// param_types: the client's Parse's (0: the server infers it).
  /// plain: as relay()'s.
  void relay_extended(const std::string& sql, const parameters& params,
                      const std::vector<uint32_t>& param_types,
                      const std::vector<int16_t>& result_formats, bool describe,
                      bool prepared, std::shared_ptr<pg_async_listener> to, bool plain = false);
  /// relay_extended() of a plain statement behind those running here, as
  /// relay_behind(). A `prepared` one only where no relay here parses the
  /// same statement (parses()): if that Parse failed, its Bind would fail
  /// with another error than its own.
  void relay_extended_behind(const std::string& sql, const parameters& params,
                             const std::vector<uint32_t>& param_types,
                             const std::vector<int16_t>& result_formats, bool describe,
                             bool prepared, std::shared_ptr<pg_async_listener> to);
  /// A relay running or waiting here parses the server statement `key`
  /// (pgwire::statement_key) that it prepares for clients.
  bool parses(std::string_view key) const;

  /// The server describes a client's statement (pgwire::
  /// describe_statement_messages): its answer comes back as bytes, but
  /// for ParseComplete. Nothing of the statement runs.
  void relay_describe(const std::string& sql, const std::vector<uint32_t>& param_types,
                      std::shared_ptr<pg_async_listener> to);

  /// During a relayed COPY FROM STDIN the listener took (on_copy_in()):
  /// the client's CopyData, as whole messages; `last` with its CopyDone or
  /// CopyFail, after which the server answers.
  void copy_forward(std::string_view messages, bool last);
  /// Forwarded copy data not yet taken by the socket: the listener stops
  /// reading its client while there is much, until on_copy_drained().
  size_t copy_backlog() const {
    return out_.size() - out_sent_;
  }

  /// The statements this connection holds prepared for clients.
  const pgwire::server_statements& prepared_statements() const {
    return statements_;
  }
  /// A client's DEALLOCATE ALL ran here: ours went with its own.
  void forget_prepared_statements() {
    statements_.forget_all();
  }

  /// The connection's socket carries the protocol in the clear.
  bool relay_capable() const;

  /// Reads on after on_rows() or on_relayed() asked to pause.
  void resume();
  /// The same, if `who`'s answer is the one being read: a session's
  /// client that drained says so, and only its own pause ends.
  void resume(const pg_async_listener* who);

  /// Asks the server to stop `who`'s statement (from a helper thread:
  /// libpq's cancel connects and waits). The run still ends with an event.
  /// One waiting behind another's is taken off (on_relay_moved(); its
  /// session, which asked, ends it as cancelled) and runs unheard; the
  /// running one's followers are moved first, and this connection takes
  /// nobody more (the cancel may land after the statement ended).
  void cancel(const pg_async_listener* who);

  /// Forgets `who`: its session is gone. Its statement is cancelled (those
  /// behind it moved first) and the connection is not reused; one waiting
  /// behind another's runs unheard. One not here any more (its statement
  /// ended before a cancel that may still land) leaves the connection
  /// unfit for reuse if that cancel went.
  void abandon(const pg_async_listener* who);

  /// Idle, connected and in no transaction: fit for the next statement.
  bool reusable() const;
  /// Reusable, and by anyone.
  bool poolable() const {
    return reusable() && !held_by_a_client();
  }

  /// Idle and connected inside a transaction block (or a failed one),
  /// by the last ReadyForQuery: its session's block goes on here.
  bool holds_transaction() const;

  /// Nothing arrived while it was idle: still usable, as far as can be
  /// known without a round trip.
  bool quiet() const;

  /// Watches the socket on the loop; false if it cannot.
  bool start();

  /// The loop it is served on, whose thread alone may use it.
  io::event_loop& loop() const {
    return *loop_;
  }

  /// While it sits idle: `fn` runs on the loop, once, if the server
  /// hangs up (idle_in_transaction_session_timeout, a terminated backend),
  /// so that a transaction block parked on it does not hold its slot
  /// until its client speaks again. Null: nobody to tell.
  void when_hung_up_idle(std::function<void()> fn);

  /// An idle connection moves to another loop in two steps: it stops
  /// being watched, on its loop's thread; then it is watched by the new
  /// one, on that one's thread (false if it cannot be).
  void leave_loop();
  bool join_loop(io::event_loop& to);

  void on_ready(uint32_t events) override;

private:
  enum class waiting { nothing, to_flush, to_read, relay_output, relay_input };

  void flush();
  void read();
  /// Hands the listener the notices libpq heard so far.
  void pass_notices();
  static void receive_notice(void* arg, const pg_result* res);
  /// Returns false once the run has ended (or was abandoned).
  bool drain_results();
  void end_run();
  void lost(const std::string& why);
  /// Reports lost(why) from the loop, never from inside the caller.
  void lose_later(std::string why);
  /// Reads what is waiting already (readable_), from the loop.
  void read_if_readable();
  void begin_relay(std::shared_ptr<pg_async_listener> to);
  void relay_write();
  void relay_read();
  /// Forwards the whole messages read so far; false once the run ended or
  /// paused.
  bool relay_scan();
  /// The server waits for COPY FROM STDIN's data: the listener forwards
  /// it, or the client gets 0A000 and the server a CopyFail.
  void start_copy_in();
  void refuse_copy_in();
  /// A relay failed: its statement may not be prepared as we think.
  void forget_failed_statement(const engine_error& e);

  /// A relay behind the running one (relay_behind()), and what becomes
  /// the running relay's once it runs.
  struct queued_relay {
    std::shared_ptr<pg_async_listener> to;
    int32_t position_shift = 0;
    bool extended = false;
    std::string parsing;
    std::string executing;
  };
  /// Appends a client's Execute in the extended protocol; `parsing` and
  /// `executing` get the keys of the kept statement it prepares and runs.
  void append_execute(const std::string& sql, const parameters& params,
                      const std::vector<uint32_t>& param_types,
                      const std::vector<int16_t>& result_formats, bool describe, bool prepared,
                      std::string& parsing, std::string& executing);
  /// More goes out behind what is being sent: what went already is dropped.
  void reuse_sent_output();
  /// Queues `next` behind the running relay; its messages are in out_.
  void queue_behind(queued_relay next);
  /// The running relay's answer ended: its listener is told, after the
  /// next one behind it (if any) became the running one. True when that
  /// one runs now.
  bool relay_ended();
  /// The relays waiting behind the running one go elsewhere
  /// (on_relay_moved(), from the loop); their answers are dropped here.
  void move_followers();
  /// Someone waits behind the running relay for an answer.
  bool followed() const;
  /// A listener whose answer nobody hears any more, kept in its place.
  void drop_listener(std::shared_ptr<pg_async_listener>& to);
  /// Watches the running relay's age while others wait behind it.
  void arm_patience();
  void disarm_patience();
  void patience_expired();
  /// What the relay waits for next: room for a Query relayed behind the
  /// running one, else the server's answer.
  void await_relay_io();
  /// Nobody hears anything here any more: the connection is done for.
  void stop_relaying();

  pg_conn* conn_;
  std::shared_ptr<io::event_loop> loop_;
  io::watch socket_; // a copy of libpq's descriptor, for epoll
  // What epoll said last: the socket may have input, may take output.
  bool readable_ = true;
  bool writable_ = true;
  bool hung_up_ = false; // epoll said the server closed its end
  std::function<void()> hung_up_idle_;
  waiting waiting_ = waiting::nothing;
  std::shared_ptr<pg_async_listener> to_;
  std::vector<column> columns_;
  bool have_columns_ = false;
  bool columns_sent_ = false;
  int64_t affected_ = -1;
  std::optional<engine_error> error_;
  bool running_ = false;
  bool paused_ = false;
  bool broken_ = false;

  // A relay: the Query out, the answer in, read past libpq.
  bool relaying_ = false;
  bool pipelined_ = false; // the running relay is plain: others may queue behind it
  bool cancel_went_ = false; // while pipelined: a cancel may land on any of them
  std::deque<queued_relay> behind_;
  std::chrono::steady_clock::time_point running_since_; // the running relay's
  // How long relays here took of late (a moving average, 1/8 per relay).
  std::chrono::steady_clock::duration typical_run_{0};
  bool patience_armed_ = false;
  io::event_loop::timer patience_timer_;
  std::chrono::milliseconds patience_ = default_pipeline_patience;
  // Alive while relays nobody hears run here: no session holds it then.
  std::shared_ptr<pg_async_connection> unheard_;
  // Where it goes once the last of them ended (its lane pool).
  std::function<void(std::shared_ptr<pg_async_connection>)> home_;
  int32_t position_shift_ = 0; // the relayed statement's start in its client's text
  bool extended_relay_ = false; // its batch ended in a Sync
  bool refusing_copy_ = false;  // a CopyFail went: the server's error is not relayed
  bool copying_in_ = false;     // the client's copy data goes on to the server
  bool copy_stalled_ = false;   // some of it waits for room in the socket
  std::string out_;
  size_t out_sent_ = 0;
  std::string in_;
  size_t in_len_ = 0;
  pgwire::relayed relayed_; // what relay_scan() read last; its buffer reused
  int64_t data_rows_ = 0;
  bool in_transaction_ = false; // what the last ReadyForQuery said
  pgwire::server_statements statements_;
  // The SQL of a statement the running relay prepares, until the server
  // says it did.
  std::string parsing_;
  // The key of the kept statement the relayed Execute runs: forgotten when
  // the server says its plan no longer fits (a table it reads changed).
  std::string executing_;
  std::vector<notice> notices_; // heard by libpq, not passed on yet
};

} // namespace qf::engines
