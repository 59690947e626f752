// libpq without blocking: PQconnectPoll, PQsendQuery(Params), PQflush,
// PQconsumeInput and single-row mode, each step on socket readiness; and
// the relay, which reads the server's messages past libpq.
#include "engines/pg_async_connection.hpp"

#include "engines/postgres_results.hpp"
#include "protocols/pgwire/relay.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include <libpq-fe.h>
#include <poll.h>
#include <unistd.h>

#include <cstring>
#include <thread>

namespace qf::engines {

namespace asio = boost::asio;
using descriptor = asio::posix::stream_descriptor;

namespace {

constexpr size_t rows_per_delivery = 4096;

/// Whether the socket is ready now, without waiting.
bool ready_now(int fd, bool for_write) {
  pollfd p{fd, static_cast<short>(for_write ? POLLOUT : POLLIN), 0};
  return ::poll(&p, 1, 0) > 0;
}

/// A copy of libpq's socket for Asio to watch; libpq keeps its own.
int watchable(PGconn* conn) {
  return ::dup(PQsocket(conn));
}

/// Drives PQconnectPoll until the connection is up or has failed.
class connect_op : public std::enable_shared_from_this<connect_op> {
public:
  connect_op(PGconn* conn, pg_async_connection::executor on,
             pg_async_connection::opened done)
    : conn_(conn), socket_(std::move(on)), done_(std::move(done)) {
    // nop
  }

  ~connect_op() {
    if (conn_)
      PQfinish(conn_);
  }

  connect_op(const connect_op&) = delete;
  connect_op& operator=(const connect_op&) = delete;

  void step(PostgresPollingStatusType status) {
    if (status == PGRES_POLLING_OK) {
      if (PQsetnonblocking(conn_, 1) != 0)
        return fail();
      socket_.close();
      auto conn = std::make_shared<pg_async_connection>(std::exchange(conn_, nullptr),
                                                        socket_.get_executor());
      return done_(std::move(conn), {});
    }
    if (status == PGRES_POLLING_FAILED)
      return fail();
    // libpq may move to a new socket (another host, a retry without SSL),
    // which may even get the old one's number: watch a fresh copy each step.
    socket_.close();
    boost::system::error_code assigned;
    socket_.assign(watchable(conn_), assigned);
    if (assigned)
      return fail();
    bool for_write = status == PGRES_POLLING_WRITING;
    socket_.async_wait(for_write ? descriptor::wait_write : descriptor::wait_read,
                       [self = shared_from_this()](boost::system::error_code ec) {
                         if (ec)
                           return self->fail();
                         self->step(PQconnectPoll(self->conn_));
                       });
  }

private:
  void fail() {
    auto why = "cannot connect to PostgreSQL: " + pq_message(PQerrorMessage(conn_));
    done_(nullptr, why);
  }

  PGconn* conn_;
  descriptor socket_;
  pg_async_connection::opened done_;
};

} // namespace

void pg_async_connection::open(const std::string& conninfo, executor on,
                               opened done) {
  pq_connect_params params{conninfo};
  auto* conn = PQconnectStartParams(params.keys, params.values, /*expand_dbname=*/1);
  if (!conn) {
    asio::post(on, [done] { done(nullptr, "cannot connect to PostgreSQL: out of memory"); });
    return;
  }
  auto op = std::make_shared<connect_op>(conn, on, std::move(done));
  if (PQstatus(conn) == CONNECTION_BAD) {
    asio::post(on, [op] { op->step(PGRES_POLLING_FAILED); });
    return;
  }
  // A connection starts by writing its startup packet.
  asio::post(on, [op] { op->step(PGRES_POLLING_WRITING); });
}

pg_async_connection::pg_async_connection(PGconn* conn, executor on)
  : conn_(conn), socket_(std::move(on)) {
  boost::system::error_code ec;
  socket_.assign(watchable(conn_), ec);
  if (!ec) // the relay writes without waiting
    socket_.non_blocking(true, ec);
  broken_ = static_cast<bool>(ec);
}

pg_async_connection::~pg_async_connection() {
  boost::system::error_code ignored;
  socket_.close(ignored);
  PQfinish(conn_);
}

void pg_async_connection::run(const std::string& sql, const parameters& params,
                              std::shared_ptr<pg_async_listener> to) {
  to_ = std::move(to);
  columns_.clear();
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
  bool sent = values.empty()
                ? PQsendQuery(conn_, sql.c_str())
                : PQsendQueryParams(conn_, sql.c_str(), static_cast<int>(values.size()),
                                    nullptr, values.data(), nullptr, nullptr, 0);
  if (broken_ || !sent) {
    auto why = pq_message(PQerrorMessage(conn_));
    // Reported from the executor, never from inside run().
    asio::post(socket_.get_executor(), [self = shared_from_this(), why] { self->lost(why); });
    return;
  }
  PQsetSingleRowMode(conn_);
  flush();
}

void pg_async_connection::flush() {
  switch (PQflush(conn_)) {
    case 0:
      return wait(false, &pg_async_connection::read);
    case 1:
      return wait(true, &pg_async_connection::flush);
    default:
      return lost(pq_message(PQerrorMessage(conn_)));
  }
}

void pg_async_connection::wait(bool for_write, void (pg_async_connection::*then)()) {
  socket_.async_wait(for_write ? descriptor::wait_write : descriptor::wait_read,
                     [self = shared_from_this(), then](boost::system::error_code ec) {
                       if (ec == asio::error::operation_aborted)
                         return;
                       if (ec)
                         return self->lost(ec.message());
                       ((*self).*then)();
                     });
}

void pg_async_connection::read() {
  if (!to_) { // abandoned: let the connection go once libpq is quiet
    broken_ = true;
    running_ = false;
    return;
  }
  if (!PQconsumeInput(conn_))
    return lost(pq_message(PQerrorMessage(conn_)));
  if (drain_results())
    wait(false, &pg_async_connection::read);
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
        PQclear(res);
        broken_ = true; // the copy state cannot be left cleanly: close
        lost("COPY is not supported through QueryFlux");
        return false;
      default:
        if (!error_)
          error_ = result_error(res);
        break;
    }
    PQclear(res);
  }
  // The listener may end this run and start the next one on this same
  // connection: nothing of this run is touched after it was told.
  auto to = to_;
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
    asio::post(socket_.get_executor(), [self = shared_from_this()] { self->read(); });
    return false;
  }
  return true;
}

void pg_async_connection::resume() {
  if (!paused_)
    return;
  paused_ = false;
  if (!running_)
    return;
  if (relaying_)
    relay_read();
  else
    read();
}

bool pg_async_connection::relay_capable() const {
  return !broken_ && !PQsslInUse(conn_);
}

void pg_async_connection::relay(const std::string& sql,
                                std::shared_ptr<pg_async_listener> to) {
  to_ = std::move(to);
  running_ = relaying_ = true;
  paused_ = false;
  data_rows_ = 0;
  error_.reset();
  out_.clear();
  pgwire::query_message(out_, sql);
  // The Query nearly always fits the socket's buffer: written here, the
  // answer is awaited at once, with no completion in between.
  boost::system::error_code ec;
  size_t sent = socket_.write_some(asio::buffer(out_), ec);
  if (ec == asio::error::would_block)
    ec = {};
  if (ec) { // reported from the executor, never from in here
    asio::post(socket_.get_executor(),
               [self = shared_from_this(), why = ec.message()] { self->lost(why); });
    return;
  }
  if (sent == out_.size())
    return relay_read();
  asio::async_write(socket_, asio::buffer(out_.data() + sent, out_.size() - sent),
                    [self = shared_from_this()](boost::system::error_code error, size_t) {
                      if (error == asio::error::operation_aborted)
                        return;
                      if (error)
                        return self->lost(error.message());
                      self->relay_read();
                    });
}

void pg_async_connection::relay_read() {
  if (!to_) { // abandoned: let the connection go
    broken_ = true;
    running_ = relaying_ = false;
    return;
  }
  constexpr size_t chunk = 64 * 1024;
  if (in_.size() < in_len_ + chunk)
    in_.resize(in_len_ + chunk);
  socket_.async_read_some(
    asio::buffer(in_.data() + in_len_, in_.size() - in_len_),
    [self = shared_from_this()](boost::system::error_code ec, size_t n) {
      if (ec == asio::error::operation_aborted)
        return;
      if (ec)
        return self->lost(ec == asio::error::eof ? "the server closed the connection"
                                                 : ec.message());
      self->in_len_ += n;
      if (self->relay_scan())
        self->relay_read();
    });
}

bool pg_async_connection::relay_scan() {
  auto r = pgwire::relay_messages({in_.data(), in_len_});
  if (r.fault) {
    lost(r.fault);
    return false;
  }
  data_rows_ += r.data_rows;
  if (r.error_code && !error_)
    error_ = server_error(*r.error_code, r.error_message);
  bool more = r.messages.empty() || to_->on_relayed(r.messages);
  std::memmove(in_.data(), in_.data() + r.consumed, in_len_ - r.consumed);
  in_len_ -= r.consumed;
  if (r.need > in_.size())
    in_.resize(r.need); // room for the whole message
  if (r.ready) {
    // Nothing follows the ReadyForQuery the server owed us; if something
    // does (a notification), the connection is not reused.
    broken_ = broken_ || r.trailing;
    in_len_ = 0;
    in_transaction_ = *r.ready != 'I';
    running_ = relaying_ = false;
    if (auto to = std::exchange(to_, nullptr))
      to->on_relay_done(data_rows_, error_ ? &*error_ : nullptr);
    return false;
  }
  if (!to_) // the listener let go while taking the messages
    return false;
  if (!more) {
    paused_ = true;
    return false;
  }
  return true;
}

void pg_async_connection::end_run() {
  running_ = false;
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
  running_ = false;
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

void pg_async_connection::cancel() {
  if (!running_)
    return;
  auto* handle = PQgetCancel(conn_);
  if (!handle)
    return;
  std::thread([handle] {
    char buf[256];
    PQcancel(handle, buf, sizeof(buf));
    PQfreeCancel(handle);
  }).detach();
}

void pg_async_connection::abandon() {
  cancel();
  to_.reset();
  broken_ = true;
}

bool pg_async_connection::quiet() const {
  // An idle connection hears nothing unless the server closed it (a
  // restart, idle_session_timeout) or sent a notice: either way, retire it.
  return !ready_now(PQsocket(conn_), false);
}

bool pg_async_connection::reusable() const {
  return !running_ && !broken_ && !in_transaction_ && PQstatus(conn_) == CONNECTION_OK
         && PQtransactionStatus(conn_) == PQTRANS_IDLE;
}

} // namespace qf::engines
