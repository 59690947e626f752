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
  void relay(const std::string& sql, std::shared_ptr<pg_async_listener> to,
             int32_t position_shift = 0);
  /// The same for a client's Execute: the statement goes out in the
  /// extended protocol (pgwire::extended_messages), and the server's
  /// answer, but for ParseComplete and BindComplete, comes back as bytes.
  /// A `prepared` statement (the client named it) is kept prepared on
  /// this connection (pgwire::server_statements), so that the server
  /// plans it once; any other goes as the unnamed statement.
  /// param_types: the client's Parse's (0: the server infers it).
  void relay_extended(const std::string& sql, const parameters& params,
                      const std::vector<uint32_t>& param_types,
                      const std::vector<int16_t>& result_formats, bool describe,
                      bool prepared, std::shared_ptr<pg_async_listener> to);

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

  /// Asks the server to stop the running statement (from a helper thread:
  /// libpq's cancel connects and waits). The run still ends with an event.
  void cancel();

  /// Forgets the listener: its session is gone. The statement is
  /// cancelled and the connection closes once the run ends.
  void abandon();

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
