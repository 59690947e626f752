// MariaDB's non-blocking API: each _start or _cont call either completes
// or returns what the socket must become (MYSQL_WAIT_READ, _WRITE) first.
// The library reads until the socket says EAGAIN before it asks to wait,
// so an edge-triggered watch hears every change it waits for.
#include "engines/mysql_async_connection.hpp"

#include "engines/mysql_client.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>
#include <utility>

namespace qf::engines {

namespace {

constexpr size_t rows_per_delivery = 4096;

} // namespace

void mysql_async_connection::open(const mysql_target& target, io::event_loop& on,
                                  opened done) {
  auto* conn = mysql_handle(true, target.connect_timeout_s);
  if (!conn) {
    on.post([done] { done(nullptr, "cannot connect to MySQL: out of memory"); });
    return;
  }
  auto c = std::make_shared<mysql_async_connection>(conn, target, on);
  sql::mysql_variables home;
  home.use(target.database); // what USE by its clients changes
  c->settings_now(std::move(home));
  c->opened_ = std::move(done);
  c->self_ = c; // the loop holds its watchers weakly
  // Reported from the loop, never from inside open().
  on.post([c] { c->advance(0); });
}

mysql_async_connection::mysql_async_connection(st_mysql* conn, mysql_target target,
                                               io::event_loop& on)
  : conn_(conn), target_(std::move(target)), loop_(on.shared_from_this()) {
  // nop
}

mysql_async_connection::~mysql_async_connection() {
  socket_.close(); // the copy; the library closes its own
  broken_ = true;
  end_run();
  mysql_close(conn_);
}

void mysql_async_connection::leave_loop() {
  ++wait_number_; // a timer it armed there is stale
  socket_.close(); // the copy: the connection itself stays open
}

bool mysql_async_connection::join_loop(io::event_loop& to) {
  loop_ = to.shared_from_this();
  socket_ = loop_->add(::dup(mysql_get_socket(conn_)), weak_from_this());
  broken_ = !socket_;
  return !broken_;
}

void mysql_async_connection::when_hung_up_idle(std::function<void()> fn) {
  hung_up_idle_ = std::move(fn);
  if (hung_up_idle_ && hung_up_ && step_ == step::idle)
    loop_->post(std::exchange(hung_up_idle_, nullptr));
}

void mysql_async_connection::on_ready(uint32_t events) {
  if (events & io::input_events)
    readable_ = true;
  if (events & io::output_events)
    writable_ = true;
  if (events & io::hang_up_events)
    hung_up_ = true;
  if (step_ == step::idle && hung_up_ && hung_up_idle_)
    loop_->post(std::exchange(hung_up_idle_, nullptr)); // not from inside on_ready
  if (paused_ || step_ == step::idle)
    return; // remembered for the next run
  int ready = (readable_ ? MYSQL_WAIT_READ : 0) | (writable_ ? MYSQL_WAIT_WRITE : 0);
  if (ready & waiting_for_)
    advance(ready);
}

bool mysql_async_connection::must_wait(int status) {
  waiting_for_ = status & (MYSQL_WAIT_READ | MYSQL_WAIT_WRITE);
  ++wait_number_;
  if (status & MYSQL_WAIT_TIMEOUT) {
    // In non-blocking mode the library only says when its timeout (the
    // connect timeout) runs out; telling it so when it does is ours. A
    // later wait makes this one stale.
    loop_->after(std::chrono::milliseconds(mysql_get_timeout_value_ms(conn_)),
                 [weak = weak_from_this(), number = wait_number_.load()] {
                   if (auto self = weak.lock(); self && self->wait_number_ == number)
                     self->advance(MYSQL_WAIT_TIMEOUT);
                 });
  }
  if (waiting_for_ == 0)
    return (status & MYSQL_WAIT_TIMEOUT) != 0;
  // What epoll said before the library found the socket empty (or full)
  // is stale now; the next event tells.
  if (waiting_for_ & MYSQL_WAIT_READ)
    readable_ = false;
  if (waiting_for_ & MYSQL_WAIT_WRITE)
    writable_ = false;
  return true;
}

void mysql_async_connection::advance(int ready) {
  switch (step_) {
    case step::connecting:
      return connect_step(ready);
    case step::querying:
      return query_step(ready);
    case step::fetching:
      return fetch_step(ready);
    case step::next_result:
      return next_result_step(ready);
    case step::idle:
      return;
  }
}

void mysql_async_connection::connect_step(int ready) {
  MYSQL* connected = nullptr;
  int status = ready == 0
                 ? mysql_real_connect_start(&connected, conn_, target_.host.c_str(),
                                            target_.user.c_str(), target_.password.c_str(),
                                            target_.database.empty() ? nullptr
                                                                     : target_.database.c_str(),
                                            target_.port, nullptr, 0)
                 : mysql_real_connect_cont(&connected, conn_, ready);
  if (!socket_ && mysql_get_socket(conn_) >= 0) {
    socket_ = loop_->add(::dup(mysql_get_socket(conn_)), weak_from_this());
    if (!socket_) {
      broken_ = true;
      step_ = step::idle;
      auto done = std::move(opened_);
      auto keep = std::move(self_);
      return done(nullptr, "cannot connect to MySQL: cannot watch the socket");
    }
  }
  if (must_wait(status))
    return;
  step_ = step::idle;
  auto done = std::move(opened_);
  auto keep = std::move(self_); // this may go with the callback
  if (!connected) {
    broken_ = true;
    return done(nullptr, std::string{"cannot connect to MySQL: "} + mysql_error(conn_));
  }
  thread_id_ = mysql_thread_id(conn_);
  done(shared_from_this(), {});
}

void mysql_async_connection::run(const std::string& sql, const parameters& params,
                                 std::shared_ptr<mysql_async_listener> to,
                                 const std::vector<sql::literal_kind>& kinds) {
  to_ = std::move(to);
  paused_ = false;
  in_run_ = true;
  std::string text;
  try {
    text = params.empty() ? sql : mysql_with_literals(conn_, sql, params, kinds);
  } catch (const engine_error& e) {
    fail(e);
    in_run_ = false;
    return;
  }
  step_ = step::querying;
  int err = 0;
  int status = mysql_real_query_start(&err, conn_, text.data(), text.size());
  if (!must_wait(status))
    query_done(err);
  in_run_ = false;
}

void mysql_async_connection::query_step(int ready) {
  int err = 0;
  int status = mysql_real_query_cont(&err, conn_, ready);
  if (!must_wait(status))
    query_done(err);
}

void mysql_async_connection::query_done(int err) {
  if (err != 0)
    return fail(mysql_failure(conn_));
  result_ = mysql_use_result(conn_);
  if (!result_) {
    if (mysql_field_count(conn_) != 0)
      return fail(mysql_failure(conn_));
    return result_done(static_cast<int64_t>(mysql_affected_rows(conn_)));
  }
  width_ = mysql_num_fields(result_);
  auto* fields = mysql_fetch_fields(result_);
  std::vector<column> cols;
  std::vector<mysqlwire::server_field> described;
  cols.reserve(width_);
  described.reserve(width_);
  for (size_t i = 0; i < width_; ++i) {
    const auto& f = fields[i];
    cols.push_back({f.name, mysql_column_type(f)});
    auto text = [](const char* s, unsigned n) { return std::string_view{s ? s : "", s ? n : 0}; };
    described.push_back(mysqlwire::server_field_of(
      {text(f.db, f.db_length), text(f.table, f.table_length), text(f.org_table, f.org_table_length),
       text(f.name, f.name_length), text(f.org_name, f.org_name_length),
       static_cast<uint16_t>(f.charsetnr), static_cast<uint32_t>(f.length),
       static_cast<uint8_t>(f.type), static_cast<uint16_t>(f.flags & ~NUM_FLAG), // NUM_FLAG: the library's
       static_cast<uint8_t>(f.decimals)}));
  }
  rows_ = {};
  rows_.width = width_;
  step_ = step::fetching;
  report(to_, [cols = std::move(cols), described = std::move(described)](mysql_async_listener& l) mutable {
    l.on_fields(std::move(described));
    l.on_columns(std::move(cols));
  });
  if (!in_run_)
    fetch_step(0);
  else // the rows follow the columns, from the loop
    loop_->post([self = shared_from_this()] { self->fetch_step(0); });
}

void mysql_async_connection::fetch_step(int ready) {
  if (step_ != step::fetching || paused_)
    return;
  if (!to_) { // abandoned: the rest is not read
    broken_ = true;
    return end_run();
  }
  for (;;) {
    MYSQL_ROW row = nullptr;
    int status = ready == 0 ? mysql_fetch_row_start(&row, result_)
                            : mysql_fetch_row_cont(&row, result_, ready);
    ready = 0;
    if (must_wait(status))
      return deliver_rows();
    if (!row) {
      if (mysql_errno(conn_) != 0)
        return fail(mysql_failure(conn_));
      deliver_rows();
      if (step_ == step::fetching)
        result_done(-1);
      return;
    }
    auto* lengths = mysql_fetch_lengths(result_);
    for (size_t c = 0; c < width_; ++c) {
      if (row[c])
        rows_.cells.emplace_back(std::string{row[c], lengths[c]});
      else
        rows_.cells.emplace_back();
    }
    if (rows_.rows() >= rows_per_delivery) {
      deliver_rows();
      if (paused_ || step_ != step::fetching)
        return;
    }
  }
}

void mysql_async_connection::result_done(int64_t affected) {
  if (!mysql_more_results(conn_))
    return finish(affected);
  if (!to_) { // abandoned: the rest is not read
    broken_ = true;
    return end_run();
  }
  if (result_)
    mysql_free_result(std::exchange(result_, nullptr)); // read to its end: no wait
  report(to_, [affected](mysql_async_listener& l) { l.on_result_end(affected); });
  step_ = step::next_result;
  next_result_step(0);
}

void mysql_async_connection::next_result_step(int ready) {
  int ret = 0;
  int status = ready == 0 ? mysql_next_result_start(&ret, conn_)
                          : mysql_next_result_cont(&ret, conn_, ready);
  if (must_wait(status))
    return;
  if (ret > 0)
    return fail(mysql_failure(conn_));
  query_done(0); // the next result begins as a statement's first does
}

void mysql_async_connection::deliver_rows() {
  if (rows_.rows() == 0 || !to_)
    return;
  bool more = to_->on_rows(rows_);
  rows_.cells.clear();
  paused_ = !more;
}

void mysql_async_connection::resume() {
  if (!paused_)
    return;
  paused_ = false;
  if (step_ != step::fetching)
    return;
  // Rows the library holds already need no event: read on from the loop.
  loop_->post([self = shared_from_this()] {
    if (self->waiting_for_ == 0 || (self->readable_ && (self->waiting_for_ & MYSQL_WAIT_READ)))
      self->fetch_step(self->waiting_for_ == 0 ? 0 : MYSQL_WAIT_READ);
  });
}

void mysql_async_connection::fail(engine_error e) {
  if (e.kind() == error_kind::internal)
    broken_ = true; // the connection is gone
  end_run(); // an error ends a result: nothing is left unread

  report(std::exchange(to_, nullptr),
         [e = std::move(e)](mysql_async_listener& l) { l.on_failed(e); });
}

void mysql_async_connection::finish(int64_t affected) {
  insert_id_ = mysql_insert_id(conn_);
  warnings_ = static_cast<uint16_t>(mysql_warning_count(conn_));
  const char* info = mysql_info(conn_);
  info_ = info ? info : "";
  end_run();
  report(std::exchange(to_, nullptr),
         [affected](mysql_async_listener& l) { l.on_done(affected); });
}

void mysql_async_connection::end_run() {
  step_ = step::idle;
  waiting_for_ = 0;
  paused_ = false;
  rows_ = {};
  if (!result_)
    return;
  if (broken_) // else freeing it would wait to read the rest
    ::shutdown(mysql_get_socket(conn_), SHUT_RDWR);
  mysql_free_result(result_);
  result_ = nullptr;
}

void mysql_async_connection::report(std::shared_ptr<mysql_async_listener> to,
                                    std::function<void(mysql_async_listener&)> what) {
  if (!to)
    return;
  if (!in_run_)
    return what(*to);
  loop_->post([to = std::move(to), what = std::move(what)] { what(*to); });
}

void mysql_async_connection::cancel() {
  if (step_ == step::idle || thread_id_ == 0)
    return;
  std::thread([target = target_, id = thread_id_] { mysql_kill_query(target, id); }).detach();
}

void mysql_async_connection::abandon() {
  cancel();
  to_ = nullptr;
  broken_ = true;
  if (step_ == step::fetching && (paused_ || waiting_for_ == 0))
    end_run(); // no event will come to end it
}

bool mysql_async_connection::reusable() const {
  return step_ == step::idle && !broken_ && conn_
         && (conn_->server_status & SERVER_STATUS_IN_TRANS) == 0;
}

bool mysql_async_connection::holds_transaction() const {
  return step_ == step::idle && !broken_ && conn_
         && (conn_->server_status & SERVER_STATUS_IN_TRANS) != 0;
}

bool mysql_async_connection::quiet() const {
  // An idle connection hears nothing unless the server closed it
  // (wait_timeout, a restart, KILL): either way, retire it.
  pollfd p{static_cast<int>(mysql_get_socket(conn_)), POLLIN, 0};
  return ::poll(&p, 1, 0) == 0;
}

} // namespace qf::engines
