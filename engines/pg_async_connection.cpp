// libpq without blocking: PQconnectPoll, PQsendQuery(Params), PQflush,
// PQconsumeInput and single-row mode, each step on socket readiness; and
// the relay, which reads the server's messages past libpq.
#include "engines/pg_async_connection.hpp"

#include "engines/postgres_results.hpp"
#include "io/round_clock.hpp"
#include "protocols/pgwire/backend.hpp"
#include "protocols/pgwire/relay.hpp"

#include <libpq-fe.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

namespace qf::engines {

namespace {

constexpr size_t rows_per_delivery = 4096;

/// Hears a relay's answer for nobody: its client left, was cancelled or
/// runs its statement elsewhere.
struct nobody_listening final : pg_async_listener {
  void on_notice(const notice&) override {}
  void on_columns(std::vector<column>) override {}
  bool on_rows(row_batch&) override {
    return true;
  }
  void on_done(int64_t) override {}
  void on_failed(const engine_error&) override {}
  bool on_relayed(std::string_view) override {
    return true;
  }
  void on_relay_done(int64_t, const engine_error*) override {}
  void on_relay_moved() override {}
};

const std::shared_ptr<pg_async_listener>& nobody() {
  static const std::shared_ptr<pg_async_listener> listener = std::make_shared<nobody_listening>();
  return listener;
}

/// Whether the socket is ready now, without waiting.
bool ready_now(int fd, bool for_write) {
  pollfd p{fd, static_cast<short>(for_write ? POLLOUT : POLLIN), 0};
  return ::poll(&p, 1, 0) > 0;
}

/// Drives PQconnectPoll until the connection is up or has failed; keeps
/// itself alive meanwhile, since the loop holds watchers weakly.
class connect_op : public io::watcher, public std::enable_shared_from_this<connect_op> {
public:
  connect_op(PGconn* conn, io::event_loop& on, pg_async_connection::opened done)
    : conn_(conn), loop_(on.shared_from_this()), done_(std::move(done)) {
    // nop
  }

  ~connect_op() override {
    if (conn_)
      PQfinish(conn_);
  }

  connect_op(const connect_op&) = delete;
  connect_op& operator=(const connect_op&) = delete;

  void step(PostgresPollingStatusType status) {
    if (!done_)
      return; // timed out meanwhile
    socket_.close();
    if (status == PGRES_POLLING_OK) {
      // PQsendQuery and PQflush must not wait for a large statement to go.
      if (PQsetnonblocking(conn_, 1) != 0)
        return fail();
      auto conn = std::make_shared<pg_async_connection>(std::exchange(conn_, nullptr), *loop_);
      auto done = std::exchange(done_, nullptr);
      self_.reset(); // after this call, nothing of this is touched
      if (!conn->start())
        return done(nullptr, "cannot connect to PostgreSQL: cannot watch the socket");
      return done(std::move(conn), {});
    }
    if (status == PGRES_POLLING_FAILED)
      return fail();
    // libpq may move to a new socket (another host, a retry without SSL),
    // which may even get the old one's number: watch a fresh copy each
    // step. A socket ready already is reported at once.
    self_ = shared_from_this();
    for_write_ = status == PGRES_POLLING_WRITING;
    socket_ = loop_->add(::dup(PQsocket(conn_)), weak_from_this());
    if (!socket_)
      return fail();
  }

  void on_ready(uint32_t events) override {
    if (done_ && events & (for_write_ ? io::output_events : io::input_events))
      step(PQconnectPoll(conn_));
  }

  /// libpq leaves connect_timeout to whoever drives PQconnectPoll: a
  /// server that takes the connection and says nothing would hold it
  /// (and its statement, and its slot) for good.
  void time_out() {
    if (!done_)
      return; // connected or failed already
    socket_.close();
    fail("timeout expired");
  }

private:
  void fail(std::string why = {}) {
    if (why.empty())
      why = pq_message(PQerrorMessage(conn_));
    why = "cannot connect to PostgreSQL: " + why;
    auto done = std::exchange(done_, nullptr);
    auto keep = std::move(self_); // this may go with it
    done(nullptr, why);
  }

  PGconn* conn_;
  std::shared_ptr<io::event_loop> loop_;
  pg_async_connection::opened done_;
  io::watch socket_;
  bool for_write_ = true;
  std::shared_ptr<connect_op> self_; // while a step waits
};

} // namespace

void pg_async_connection::open(const std::string& conninfo, io::event_loop& on,
                               opened done, std::chrono::milliseconds timeout) {
  pq_connect_params params{conninfo, pq_connect_params::zone::servers};
  auto* conn = PQconnectStartParams(params.keys, params.values, /*expand_dbname=*/1);
  if (!conn) {
    on.post([done] { done(nullptr, "cannot connect to PostgreSQL: out of memory"); });
    return;
  }
  keep_notices_from_stderr(conn);
  auto op = std::make_shared<connect_op>(conn, on, std::move(done));
  // Reported from the loop, never from inside open().
  auto first = PQstatus(conn) == CONNECTION_BAD ? PGRES_POLLING_FAILED
                                                  : PGRES_POLLING_WRITING;
  on.post([op, first] { op->step(first); });
  on.after(timeout, [weak = std::weak_ptr<connect_op>(op)] {
    if (auto waiting = weak.lock())
      waiting->time_out();
  });
}

pg_async_connection::pg_async_connection(PGconn* conn, io::event_loop& on)
  : conn_(conn), loop_(on.shared_from_this()) {
  PQsetNoticeReceiver(conn_, &pg_async_connection::receive_notice, this);
}

void pg_async_connection::receive_notice(void* arg, const PGresult* res) {
  auto& self = *static_cast<pg_async_connection*>(arg);
  if (!self.running_ || self.relaying_ || self.notices_.size() >= max_notices_per_statement)
    return; // nobody to hand it to; or a loop raising them, bounded
  self.notices_.push_back(notice_of(res));
}

void pg_async_connection::pass_notices() {
  if (notices_.empty() || !to_)
    return;
  auto to = to_;
  for (const auto& n : std::exchange(notices_, {}))
    to->on_notice(n);
}

pg_async_connection::~pg_async_connection() {
  socket_.close(); // the copy; libpq closes its own
  PQfinish(conn_);
}

bool pg_async_connection::start() {
  socket_ = loop_->add(::dup(PQsocket(conn_)), weak_from_this());
  broken_ = !socket_;
  return !broken_;
}

void pg_async_connection::leave_loop() {
  socket_.close(); // the copy: the connection itself stays open
  disarm_patience(); // its timer is the old loop's
}

bool pg_async_connection::join_loop(io::event_loop& to) {
  loop_ = to.shared_from_this();
  return start();
}

void pg_async_connection::when_hung_up_idle(std::function<void()> fn) {
  hung_up_idle_ = std::move(fn);
  if (hung_up_idle_ && hung_up_ && !running_)
    loop_->post(std::exchange(hung_up_idle_, nullptr));
}

void pg_async_connection::on_ready(uint32_t events) {
  if (events & io::input_events)
    readable_ = true;
  if (events & io::hang_up_events)
    hung_up_ = true;
  if (events & io::output_events)
    writable_ = true;
  if (!running_ && hung_up_ && hung_up_idle_)
    loop_->post(std::exchange(hung_up_idle_, nullptr)); // not from inside on_ready
  if (!running_ || paused_)
    return; // remembered for the next run
  switch (waiting_) {
    case waiting::to_flush:
      if (writable_)
        flush();
      break;
    case waiting::to_read:
      if (readable_)
        read();
      break;
    case waiting::relay_output:
      if (writable_)
        relay_write();
      else if (readable_ && pipelined_) // the server answers those ahead meanwhile
        relay_read();
      break;
    case waiting::relay_input:
      if (readable_)
        relay_read();
      break;
    case waiting::nothing:
      break;
  }
}

void pg_async_connection::read_if_readable() {
  // What epoll will not announce again (a server's goodbye that came while
  // the connection was idle, input libpq left unread): read it in a
  // moment; else the next event comes. Never inside run() or relay(),
  // whose caller finishes its bookkeeping after them.
  if (readable_)
    loop_->post([self = shared_from_this()] { self->on_ready(0); });
}

void pg_async_connection::lose_later(std::string why) {
  loop_->post([self = shared_from_this(), why = std::move(why)] { self->lost(why); });
}

namespace {

/// libpq's paramTypes: the client's types, one per value (0, inferred by
/// the server, past those it declared); empty when it declared none.
std::vector<Oid> typed(const std::vector<uint32_t>& types, size_t values) {
  std::vector<Oid> oids;
  if (!types.empty()) {
    oids.assign(values, 0);
    std::copy_n(types.begin(), std::min(types.size(), values), oids.begin());
  }
  return oids;
}

} // namespace

void pg_async_connection::run(const std::string& sql, const parameters& params,
                              std::shared_ptr<pg_async_listener> to,
                              const std::vector<uint32_t>& param_types) {
  to_ = std::move(to);
  columns_.clear();
  notices_.clear(); // an ended run's, never passed on: not this one's
  have_columns_ = columns_sent_ = paused_ = false;
  affected_ = -1;
  error_.reset();
  running_ = true;
  // At most a handful of parameters: a small vector on the stack would do,
  // but one allocation per statement does not show next to the syscalls.
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params)
    values.push_back(p ? p->c_str() : nullptr);
  // Without parameters the simple protocol: one message out instead of
  // five, and less work for the server than an unnamed Parse and Bind.
  auto oids = typed(param_types, values.size());
  bool sent = values.empty()
                ? PQsendQuery(conn_, sql.c_str())
                : PQsendQueryParams(conn_, sql.c_str(), static_cast<int>(values.size()),
                                    oids.empty() ? nullptr : oids.data(), values.data(),
                                    nullptr, nullptr, 0);
  if (broken_ || !sent)
    return lose_later(pq_message(PQerrorMessage(conn_)));
  PQsetSingleRowMode(conn_);
  flush();
}

void pg_async_connection::flush() {
  waiting_ = waiting::nothing;
  switch (PQflush(conn_)) {
    case 0:
      waiting_ = waiting::to_read;
      return read_if_readable();
    case 1:
      writable_ = false;
      waiting_ = waiting::to_flush;
      return;
    default:
      return lose_later(pq_message(PQerrorMessage(conn_)));
  }
}

void pg_async_connection::read() {
  waiting_ = waiting::nothing;
  if (!to_) { // abandoned: let the connection go once libpq is quiet
    broken_ = true;
    running_ = false;
    return;
  }
  if (!PQconsumeInput(conn_))
    return lost(pq_message(PQerrorMessage(conn_)));
  if (!drain_results()) {
    if (!running_) // for the next run: whether anything is left to hear
      readable_ = ready_now(PQsocket(conn_), false);
    return;
  }
  // libpq does not always read a socket dry, and epoll reports only what
  // arrives from now on: ask the socket.
  readable_ = ready_now(PQsocket(conn_), false);
  waiting_ = waiting::to_read;
  read_if_readable();
}

bool pg_async_connection::drain_results() {
  row_batch batch;
  batch.width = columns_.size();
  bool ended = false;
  while (!PQisBusy(conn_) && batch.rows() < rows_per_delivery) {
    auto* res = PQgetResult(conn_);
    if (!res) {
      ended = true;
      break;
    }
    switch (PQresultStatus(res)) {
      case PGRES_SINGLE_TUPLE:
      case PGRES_TUPLES_OK:
        if (!have_columns_) {
          columns_ = columns_of(res);
          have_columns_ = true;
          batch.width = columns_.size();
        }
        if (PQntuples(res) > 0)
          append_row(batch, columns_, res, 0);
        break;
      case PGRES_COMMAND_OK: {
        auto* tuples = PQcmdTuples(res);
        affected_ = tuples && *tuples ? std::atoll(tuples) : -1;
        have_columns_ = true;
        break;
      }
      case PGRES_EMPTY_QUERY:
        if (!error_)
          error_ = engine_error(error_kind::syntax, "empty query");
        break;
      case PGRES_COPY_IN:
      case PGRES_COPY_OUT:
      case PGRES_COPY_BOTH:
        // Only the relay carries COPY. Leaving it cleanly here would take
        // the server's data or ours: the connection is closed instead.
        PQclear(res);
        broken_ = true;
        error_ = engine_error(error_kind::user,
                              "COPY is not supported through QueryFlux to a server reached over TLS",
                              "0A000");
        end_run();
        return false;
      default:
        if (!error_)
          error_ = result_error(res);
        break;
    }
    PQclear(res);
  }
  pass_notices();
  while (auto* n = PQnotifies(conn_)) { // a LISTEN's, for nobody: as the relay does
    PQfreemem(n);
    private_state_ = true;
  }
  // The listener may end this run and start the next one on this same
  // connection: nothing of this run is touched after it was told.
  auto to = to_;
  if (!to)
    return false;
  if (have_columns_ && !columns_sent_ && !error_) {
    columns_sent_ = true;
    to->on_columns(columns_);
    if (to_ != to) // the listener refused the columns and let go
      return false;
  }
  if (batch.rows() > 0 && !error_ && !to->on_rows(batch)) {
    paused_ = true;
    if (!ended)
      return false;
  }
  if (ended) {
    end_run();
    return false;
  }
  if (!to_)
    return false;
  if (!PQisBusy(conn_)) { // more results are complete already
    waiting_ = waiting::to_read;
    readable_ = true;
    read_if_readable();
    return false;
  }
  return true;
}

void pg_async_connection::resume(const pg_async_listener* who) {
  if (to_.get() == who)
    resume();
}

void pg_async_connection::resume() {
  if (!paused_)
    return;
  paused_ = false;
  if (!running_)
    return;
  if (!relaying_)
    return read(); // libpq may hold complete results already
  if (out_sent_ < out_.size())
    return relay_write(); // a CopyFail that waited for room, then the answer
  waiting_ = waiting::relay_input;
  if (readable_)
    relay_read();
}

bool pg_async_connection::relay_capable() const {
  return !broken_ && !PQsslInUse(conn_);
}

void pg_async_connection::relay(const std::string& sql,
                                std::shared_ptr<pg_async_listener> to, int32_t position_shift,
                                bool plain) {
  begin_relay(std::move(to));
  position_shift_ = position_shift;
  extended_relay_ = false;
  pipelined_ = plain && !held_by_a_client(); // a client's own: nobody else's runs here
  pgwire::query_message(out_, sql);
  relay_write();
}

bool pg_async_connection::takes_more_behind(size_t depth) const {
  return pipelining() && !held_by_a_client() && !paused_ && !copying_in_ && !refusing_copy_
         && !cancel_went_ && to_ != nobody() && behind_.size() + 1 < depth
         && typical_run_ < pipeline_typical_run_limit
         && io::round_clock::steady() - running_since_ < pipeline_join_window;
}

void pg_async_connection::relay_behind(const std::string& sql,
                                       std::shared_ptr<pg_async_listener> to,
                                       int32_t position_shift) {
  reuse_sent_output();
  pgwire::query_message(out_, sql);
  queue_behind({std::move(to), position_shift, false, {}, {}});
}

void pg_async_connection::reuse_sent_output() {
  if (out_sent_ == out_.size()) {
    out_.clear();
    out_sent_ = 0;
  }
}

void pg_async_connection::queue_behind(queued_relay next) {
  behind_.push_back(std::move(next));
  if (!patience_armed_)
    arm_patience();
  if (waiting_ != waiting::relay_output)
    relay_write();
}

void pg_async_connection::arm_patience() {
  patience_armed_ = true;
  auto waited = io::round_clock::steady() - running_since_;
  auto left = std::chrono::ceil<std::chrono::milliseconds>(patience_ - waited);
  patience_timer_ = loop_->after(std::max(left, std::chrono::milliseconds{1}),
                                 [weak = weak_from_this()] {
                                   if (auto self = weak.lock())
                                     self->patience_expired();
                                 });
}

void pg_async_connection::disarm_patience() {
  if (std::exchange(patience_armed_, false))
    loop_->cancel(patience_timer_);
}

void pg_async_connection::patience_expired() {
  patience_armed_ = false;
  if (!relaying_ || !followed())
    return;
  if (io::round_clock::steady() - running_since_ >= patience_)
    return move_followers();
  arm_patience(); // another one runs now: its own time
}

bool pg_async_connection::followed() const {
  return std::any_of(behind_.begin(), behind_.end(),
                     [](const queued_relay& q) { return q.to != nobody(); });
}

void pg_async_connection::move_followers() {
  for (auto& queued : behind_) {
    if (queued.to == nobody())
      continue;
    auto to = queued.to;
    drop_listener(queued.to);
    to->on_relay_detached();
    loop_->post([to = std::move(to)] { to->on_relay_moved(); });
  }
}

void pg_async_connection::drop_listener(std::shared_ptr<pg_async_listener>& to) {
  to = nobody();
  if (!unheard_)
    unheard_ = shared_from_this();
}

void pg_async_connection::relay_extended(const std::string& sql, const parameters& params,
                                         const std::vector<uint32_t>& param_types,
                                         const std::vector<int16_t>& result_formats,
                                         bool describe, bool prepared,
                                         std::shared_ptr<pg_async_listener> to, bool plain) {
  begin_relay(std::move(to));
  position_shift_ = 0; // the client's statement, whole
  extended_relay_ = true;
  pipelined_ = plain && !held_by_a_client();
  append_execute(sql, params, param_types, result_formats, describe, prepared, parsing_,
                 executing_);
  relay_write();
}

void pg_async_connection::relay_extended_behind(const std::string& sql, const parameters& params,
                                                const std::vector<uint32_t>& param_types,
                                                const std::vector<int16_t>& result_formats,
                                                bool describe, bool prepared,
                                                std::shared_ptr<pg_async_listener> to) {
  reuse_sent_output();
  queued_relay next{std::move(to), 0, true, {}, {}};
  append_execute(sql, params, param_types, result_formats, describe, prepared, next.parsing,
                 next.executing);
  queue_behind(std::move(next));
}

void pg_async_connection::append_execute(const std::string& sql, const parameters& params,
                                         const std::vector<uint32_t>& param_types,
                                         const std::vector<int16_t>& result_formats,
                                         bool describe, bool prepared, std::string& parsing,
                                         std::string& executing) {
  pgwire::statement_ref statement;
  if (prepared) {
    // The same text with other parameter types is another statement.
    auto key = pgwire::statement_key(sql, param_types);
    auto use = statements_.prepare(out_, key);
    statement = {use.name, use.parse};
    if (use.parse)
      parsing = key;
    executing = std::move(key);
  }
  pgwire::extended_messages(out_, sql, params, param_types, result_formats, describe,
                            statement);
}

bool pg_async_connection::parses(std::string_view key) const {
  return (relaying_ && parsing_ == key)
         || std::any_of(behind_.begin(), behind_.end(),
                        [key](const queued_relay& q) { return q.parsing == key; });
}

void pg_async_connection::relay_describe(const std::string& sql,
                                         const std::vector<uint32_t>& param_types,
                                         std::shared_ptr<pg_async_listener> to) {
  begin_relay(std::move(to));
  position_shift_ = 0;
  extended_relay_ = true;
  pgwire::describe_statement_messages(out_, sql, param_types);
  relay_write();
}

void pg_async_connection::begin_relay(std::shared_ptr<pg_async_listener> to) {
  running_since_ = io::round_clock::steady();
  to_ = std::move(to);
  running_ = relaying_ = true;
  pipelined_ = cancel_went_ = false;
  paused_ = false;
  data_rows_ = 0;
  refusing_copy_ = copying_in_ = copy_stalled_ = false;
  error_.reset();
  parsing_.clear();
  executing_.clear();
  out_.clear();
  out_sent_ = 0;
}

void pg_async_connection::relay_write() {
  waiting_ = waiting::nothing;
  while (out_sent_ < out_.size()) {
    ssize_t n = ::send(socket_.fd(), out_.data() + out_sent_, out_.size() - out_sent_,
                       MSG_NOSIGNAL);
    if (n >= 0) {
      out_sent_ += static_cast<size_t>(n);
      continue;
    }
    if (errno == EINTR)
      continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      writable_ = false;
      waiting_ = waiting::relay_output;
      copy_stalled_ = copying_in_;
      return;
    }
    return lose_later(std::strerror(errno)); // never from inside relay()
  }
  waiting_ = waiting::relay_input;
  if (std::exchange(copy_stalled_, false))
    loop_->post([self = shared_from_this(), to = to_] {
      if (to && self->to_ == to)
        to->on_copy_drained();
    });
  read_if_readable();
}

void pg_async_connection::relay_read() {
  waiting_ = waiting::nothing;
  if (!to_) // abandoned: let the connection go
    return stop_relaying();
  constexpr size_t chunk = 64 * 1024;
  for (;;) {
    if (in_.size() < in_len_ + chunk)
      in_.resize(in_len_ + chunk);
    size_t room = in_.size() - in_len_;
    ssize_t n = ::recv(socket_.fd(), in_.data() + in_len_, room, 0);
    if (n == 0)
      return lost("the server closed the connection");
    if (n < 0) {
      if (errno == EINTR)
        continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        return lost(std::strerror(errno));
      readable_ = false;
      return await_relay_io();
    }
    // A short read emptied the socket: the rest is announced by epoll,
    // but for the end of the stream, which it announced already.
    readable_ = static_cast<size_t>(n) == room || hung_up_;
    in_len_ += static_cast<size_t>(n);
    bool go_on = relay_scan();
    if (refusing_copy_ && out_sent_ < out_.size())
      return relay_write(); // the CopyFail; the server's answer follows
    if (!go_on)
      return;
    await_relay_io();
    if (!readable_)
      return;
  }
}

void pg_async_connection::await_relay_io() {
  // A Query relayed behind the running one may wait for room in the
  // socket (relay_behind() from inside an answer's callback).
  waiting_ = out_sent_ < out_.size() ? waiting::relay_output : waiting::relay_input;
}

void pg_async_connection::stop_relaying() {
  to_.reset();
  behind_.clear();
  broken_ = true;
  running_ = relaying_ = pipelined_ = paused_ = false;
  waiting_ = waiting::nothing;
  disarm_patience();
  if (unheard_)
    loop_->post([self = std::exchange(unheard_, nullptr)] {});
}

bool pg_async_connection::relay_scan() {
  for (;;) {
    auto& r = relayed_;
    pgwire::relay_messages({in_.data(), in_len_}, r, pgwire::default_max_message,
                           refusing_copy_ ? pgwire::server_errors::dropped
                                          : pgwire::server_errors::relayed,
                           position_shift_);
    if (r.fault) {
      lost(r.fault);
      return false;
    }
    data_rows_ += r.data_rows;
    // It listens (LISTEN from a function), or a function changed a setting
    // of the server's session: its client's alone (hold_private_state()).
    if (r.notified)
      private_state_ = true;
    if (r.setting_changed)
      setting_reported_ = true;
    if (r.parse_complete)
      parsing_.clear(); // prepared: a later error leaves it so
    if (r.copy_in)
      start_copy_in();
    if (r.error_code && !error_)
      error_ = server_error(*r.error_code, r.error_message);
    bool more = r.messages.empty() || to_->on_relayed(r.messages);
    if (r.messages.capacity() > 256 * 1024) // after a large row: not kept while pooled
      r.messages = {};
    std::memmove(in_.data(), in_.data() + r.consumed, in_len_ - r.consumed);
    in_len_ -= r.consumed;
    if (r.need > in_.size())
      in_.resize(r.need); // room for the whole message
    if (r.ready) {
      in_transaction_ = *r.ready != 'I';
      if (!relay_ended())
        return false;
      if (in_len_ == 0)
        return true; // the next one's answer is still to come
      continue;
    }
    if (!to_) // the listener let go while taking the messages
      return false;
    if (!more) {
      paused_ = true;
      move_followers(); // not held up by a client that reads slowly
      return false;
    }
    return true;
  }
}

bool pg_async_connection::relay_ended() {
  auto now = io::round_clock::steady();
  typical_run_ += (now - running_since_ - typical_run_) / 8;
  if (error_)
    forget_failed_statement(*error_);
  auto to = std::exchange(to_, nullptr);
  auto rows = std::exchange(data_rows_, 0);
  auto error = std::exchange(error_, std::nullopt);
  // A plain statement cannot open a transaction block; if one did (a
  // function behind a view), those behind it must not run inside it.
  // Nor after one that left its client's state here (a function's
  // set_config() or LISTEN behind a view).
  bool next = !behind_.empty() && !broken_ && !in_transaction_ && !held_by_a_client();
  if (next) {
    auto& front = behind_.front();
    to_ = std::move(front.to);
    position_shift_ = front.position_shift;
    extended_relay_ = front.extended;
    parsing_ = std::move(front.parsing);
    executing_ = std::move(front.executing);
    behind_.pop_front();
    running_since_ = now;
  } else {
    if (!behind_.empty()) {
      move_followers();
      behind_.clear();
      broken_ = true; // their answers would come to nobody's next statement
    }
    // Nothing follows the ReadyForQuery the server owed us; if something
    // does (a notification), the connection is not reused.
    broken_ = broken_ || in_len_ > 0;
    in_len_ = 0;
    if (in_.size() > 1024 * 1024) // grown for a large row: not kept while pooled
      in_ = {};
    running_ = relaying_ = pipelined_ = false;
    disarm_patience();
    if (unheard_) {
      // The last answer was nobody's: no session gives the connection back.
      bool orphan = to == nobody();
      loop_->post([self = std::exchange(unheard_, nullptr), orphan] {
        if (orphan && self->home_ && self->poolable())
          self->home_(self);
      });
    }
  }
  if (to)
    to->on_relay_done(rows, error ? &*error : nullptr);
  return next && to_ && relaying_; // its listener may have let the connection go
}

void pg_async_connection::start_copy_in() {
  // A simple Query's only: after an extended batch the server would wait
  // for a Sync of ours as well, which the listener does not send.
  if (extended_relay_ || !to_->on_copy_in())
    return refuse_copy_in();
  copying_in_ = true;
  relayed_.messages.append(relayed_.copy_in_response);
}

void pg_async_connection::copy_forward(std::string_view messages, bool last) {
  if (!copying_in_)
    return; // the server ended the copy already (an error): ignored, as it would
  reuse_sent_output();
  out_.append(messages);
  copying_in_ = !last;
  relay_write();
}

void pg_async_connection::refuse_copy_in() {
  // The client is told, and the server ends the copy: CopyFail's error is
  // dropped in favour of ours, and the connection serves the next statement.
  static const std::string why
    = "COPY FROM STDIN is supported through QueryFlux in a simple Query only";
  refusing_copy_ = true;
  error_ = engine_error(error_kind::user, why, "0A000");
  pgwire::error_response(relayed_.messages, {"ERROR", "0A000", why, {}});
  out_.clear();
  out_sent_ = 0;
  pgwire::copy_fail_message(out_, why, extended_relay_);
}

void pg_async_connection::forget_failed_statement(const engine_error& e) {
  if (e.sqlstate() == "26000") // a name of ours is gone: DEALLOCATE, DISCARD
    statements_.forget_all();
  else if (!parsing_.empty()) // its Parse failed
    statements_.failed(parsing_);
  else if (!executing_.empty() && e.sqlstate() == "0A000") // cached plan must not change result type
    statements_.failed(executing_); // parsed anew next time, as the client's driver does
  parsing_.clear();
  executing_.clear();
}

void pg_async_connection::end_run() {
  running_ = false;
  auto status = PQtransactionStatus(conn_); // libpq read this run's ReadyForQuery
  in_transaction_ = status == PQTRANS_INTRANS || status == PQTRANS_INERROR;
  auto to = std::exchange(to_, nullptr);
  if (!to)
    return;
  if (error_)
    to->on_failed(*error_);
  else
    to->on_done(affected_);
}

void pg_async_connection::lost(const std::string& why) {
  broken_ = true;
  running_ = pipelined_ = false;
  // Their answers had not begun: they run elsewhere, as they would have.
  move_followers();
  behind_.clear();
  disarm_patience();
  if (unheard_)
    loop_->post([self = std::exchange(unheard_, nullptr)] {});
  if (std::exchange(relaying_, false) && error_) {
    // The server said why before it went (a terminated backend), and the
    // client has that error already: the run ends with it, once.
    if (auto to = std::exchange(to_, nullptr))
      to->on_relay_done(data_rows_, &*error_);
    return;
  }
  if (auto to = std::exchange(to_, nullptr))
    to->on_failed(engine_error(error_kind::internal,
                               "the connection to PostgreSQL failed: " + why, "08006"));
}

void pg_async_connection::cancel(const pg_async_listener* who) {
  if (!running_)
    return;
  if (to_.get() != who) {
    auto waits = std::find_if(behind_.begin(), behind_.end(),
                              [who](const queued_relay& q) { return q.to.get() == who; });
    if (waits != behind_.end()) {
      // The server runs it unheard (a plain statement): its session, which
      // asked for the cancel, ends it as cancelled.
      auto to = waits->to;
      drop_listener(waits->to);
      to->on_relay_detached();
      loop_->post([to = std::move(to)] { to->on_relay_moved(); });
      return;
    }
    if (pipelined_)
      return; // it ended: the statement running now is another client's
    // Not pipelined, what runs is its session's (a replay of its settings).
  } else if (pipelined_) {
    // The cancel may land once this one ended: on a follower, whose answer
    // nobody hears then, never on a statement that joins later.
    move_followers();
    cancel_went_ = true;
  }
  auto* handle = PQgetCancel(conn_);
  if (!handle)
    return;
  std::thread([handle] {
    char buf[256];
    PQcancel(handle, buf, sizeof(buf));
    PQfreeCancel(handle);
  }).detach();
}

void pg_async_connection::abandon(const pg_async_listener* who) {
  auto waits = std::find_if(behind_.begin(), behind_.end(),
                            [who](const queued_relay& q) { return who && q.to.get() == who; });
  if (waits != behind_.end())
    return drop_listener(waits->to);
  if (pipelined_ && to_.get() != who) {
    // Its statement ended; a cancel sent for it may still land here.
    broken_ = broken_ || cancel_went_;
    return;
  }
  cancel(who); // those behind it are moved first
  if (pipelined_)
    return stop_relaying();
  to_.reset();
  broken_ = true;
}

bool pg_async_connection::quiet() const {
  // An idle connection hears nothing unless the server closed it (a
  // restart, idle_session_timeout) or sent a notice: either way, retire it.
  return !ready_now(PQsocket(conn_), false);
}

bool pg_async_connection::reusable() const {
  // Not PQtransactionStatus(): relays pass beside libpq, whose own idea of
  // the status is the last one it read.
  return !running_ && !broken_ && !in_transaction_ && PQstatus(conn_) == CONNECTION_OK;
}

bool pg_async_connection::holds_transaction() const {
  return !running_ && !broken_ && in_transaction_ && PQstatus(conn_) == CONNECTION_OK;
}

} // namespace qf::engines
