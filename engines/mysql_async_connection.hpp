// A MariaDB Connector/C connection in non-blocking mode (the _start/_cont
// calls), driven by readiness on the event loop it was opened on, as
// pg_async_connection is for PostgreSQL: the statement goes out and its
// rows come back on the wire thread, with no thread of its own and no
// actor between. The first step of the MySQL wire fast lane
// (docs/architecture.md).
#pragma once

#include "engines/client_state.hpp"
#include "engines/engine.hpp"
#include "engines/mysql_engine.hpp"
#include "io/event_loop.hpp"
#include "protocols/mysqlwire/packets.hpp"
#include "protocols/sql/placeholders.hpp"
#include "protocols/sql/session_settings.hpp"

#include <atomic>
#include <functional>
#include <memory>
#include <string>

struct st_mysql;
struct st_mysql_res;

namespace qf::engines {

/// What a run reports, on the connection's loop, never from inside run().
class mysql_async_listener {
public:
  virtual ~mysql_async_listener() = default;
  /// Right before on_columns(): the columns as the server described them,
  /// for a client that reads them as MySQL's (their definitions passed on).
  virtual void on_fields(std::vector<mysqlwire::server_field>) {}
  /// Once per run that returns rows, before them (also when there are none).
  virtual void on_columns(std::vector<column> cols) = 0;
  /// Some rows; return false to pause reading until resume().
  virtual bool on_rows(row_batch& rows) = 0;
  /// One of the run's results ended and another follows (a CALL's:
  /// each result set of its procedure, then its status); affected_rows
  /// for a result without rows. on_columns() begins the next with rows.
  virtual void on_result_end(int64_t affected_rows) = 0;
  /// The run ended; affected_rows for a statement without a result.
  virtual void on_done(int64_t affected_rows) = 0;
  virtual void on_failed(const engine_error& e) = 0;
};

class mysql_async_connection : public io::watcher,
                               public client_state<sql::mysql_variables>,
                               public std::enable_shared_from_this<mysql_async_connection> {
public:
  using opened
    = std::function<void(std::shared_ptr<mysql_async_connection>, std::string error)>;

  /// Connects without blocking; `done` runs on the loop's thread with the
  /// connection, or null and the reason. Call on that thread.
  static void open(const mysql_target& target, io::event_loop& on, opened done);

  ~mysql_async_connection() override;
  mysql_async_connection(const mysql_async_connection&) = delete;
  mysql_async_connection& operator=(const mysql_async_connection&) = delete;

  /// Runs one statement, parameters spliced in as literals; its rows
  /// stream (mysql_use_result). One run at a time.
  /// kinds: each parameter's, as its client's types said (none: judged by
  /// the value).
  void run(const std::string& sql, const parameters& params,
           std::shared_ptr<mysql_async_listener> to,
           const std::vector<sql::literal_kind>& kinds = {});

  /// Reads on after on_rows() asked to pause.
  void resume();
  /// The same, called as PostgreSQL's is (one statement at a time: the
  /// paused one is the listener's).
  void resume(const mysql_async_listener*) {
    resume();
  }

  /// KILL QUERY from a helper thread (the protocol has no out-of-band
  /// cancel). The run still ends with an event.
  void cancel();
  /// The same, called as PostgreSQL's is (it runs one statement at a time:
  /// the one running is the listener's).
  void cancel(const mysql_async_listener*) {
    cancel();
  }

  /// Forgets the listener: its session is gone. The statement is killed
  /// and the connection is not reused.
  void abandon();
  void abandon(const mysql_async_listener*) {
    abandon();
  }

  /// Connected, idle, sound and in no transaction: fit for the next
  /// statement.
  bool reusable() const;
  /// Reusable, and by anyone.
  bool poolable() const {
    return reusable() && !held_by_a_client();
  }

  /// Connected, idle and sound inside a transaction (the server's
  /// SERVER_STATUS_IN_TRANS): its session's block goes on here.
  bool holds_transaction() const;

  /// Nothing arrived while it was idle: still usable, as far as can be
  /// known without a round trip.
  bool quiet() const;

  /// What the server said of the last statement that ended (on_done()):
  /// the id AUTO_INCREMENT gave (or LAST_INSERT_ID(expr) set), its
  /// warnings, and its summary ("Rows matched: 1  Changed: 0 ...").
  uint64_t insert_id() const {
    return insert_id_;
  }
  uint16_t warnings() const {
    return warnings_;
  }
  const std::string& info() const {
    return info_;
  }

  /// The database it was opened in: a client that names none gets it.
  const std::string& home_database() const {
    return target_.database;
  }

  /// The loop it is served on, whose thread alone may use it.
  io::event_loop& loop() const {
    return *loop_;
  }

  /// While it sits idle: `fn` runs on the loop, once, if the server
  /// hangs up (wait_timeout, KILL), so that a transaction block parked on
  /// it does not hold its slot until its client speaks again. Null:
  /// nobody to tell.
  void when_hung_up_idle(std::function<void()> fn);

  /// An idle connection moves to another loop in two steps: it stops
  /// being watched, on its loop's thread; then it is watched by the new
  /// one, on that one's thread (false if it cannot be).
  void leave_loop();
  bool join_loop(io::event_loop& to);

  void on_ready(uint32_t events) override;

  /// Use open().
  mysql_async_connection(st_mysql* conn, mysql_target target, io::event_loop& on);

private:
  enum class step { connecting, querying, fetching, next_result, idle };

  /// Goes on with the current step, given what the socket is ready for.
  void advance(int ready);
  void connect_step(int ready);
  void query_step(int ready);
  /// The query went out and its answer began: columns or a count.
  void query_done(int err);
  void fetch_step(int ready);
  /// A result was read to its end: the next one, or the run's end.
  void result_done(int64_t affected);
  void next_result_step(int ready);
  /// A _start/_cont call returned `status`: wait for the socket, or
  /// false when the call completed.
  bool must_wait(int status);
  void deliver_rows();
  void fail(engine_error e);
  void finish(int64_t affected);
  /// Back to idle; a result left unread goes with the connection.
  void end_run();
  /// Tells `to`, from the loop, never from inside run().
  void report(std::shared_ptr<mysql_async_listener> to,
              std::function<void(mysql_async_listener&)> what);

  st_mysql* conn_;
  mysql_target target_;
  std::shared_ptr<io::event_loop> loop_;
  io::watch socket_; // a copy of the library's descriptor, for epoll
  step step_ = step::connecting;
  int waiting_for_ = 0; // MYSQL_WAIT_READ / MYSQL_WAIT_WRITE
  // Which wait a timeout timer belongs to; atomic, as a timer armed on
  // the loop it left may still look.
  std::atomic<uint64_t> wait_number_{0};
  bool readable_ = false;
  bool writable_ = false;
  bool hung_up_ = false; // epoll said the server closed its end
  std::function<void()> hung_up_idle_;
  bool in_run_ = false;
  bool paused_ = false;
  bool broken_ = false;
  std::shared_ptr<mysql_async_listener> to_;
  opened opened_;                                // while connecting
  std::shared_ptr<mysql_async_connection> self_; // while connecting
  st_mysql_res* result_ = nullptr;
  size_t width_ = 0;
  row_batch rows_;
  unsigned long thread_id_ = 0;
  uint64_t insert_id_ = 0;
  uint16_t warnings_ = 0;
  std::string info_;
};

} // namespace qf::engines
