// The wire frontends' sessions: MySQL's are actors, fed bytes as
// messages; PostgreSQL's run on the wire thread (pg_wire_session).
#include "net/boundary/wire_frontends.hpp"

#include "actors/data/mysql_session.hpp"
#include "net/boundary/pg_wire_session.hpp"

#include <caf/all.hpp>

#include <random>

namespace qf::boundary {

namespace {

class session_handler : public wire::handler {
public:
  explicit session_handler(caf::actor session) : session_(std::move(session)) {
    // nop
  }

  void on_data(std::string_view bytes) override {
    caf::anon_send(session_, atom::data::value, std::string(bytes));
  }

  void on_closed() override {
    caf::anon_send_exit(session_, caf::exit_reason::user_shutdown);
  }

  void on_tls_ready() override {
    caf::anon_send(session_, atom::tls::value);
  }

private:
  caf::actor session_;
};

/// The session keeps its connection open; the connection lets go of the
/// session's handler when the socket closes, which ends the session.
wire_io io_of(const std::shared_ptr<wire::connection>& conn) {
  return wire_io{
    [conn](std::string bytes) { conn->write(std::move(bytes)); },
    [conn] { conn->close(); },
    [conn] { conn->read_more(); },
    [conn] { conn->start_tls(); },
  };
}

/// Random bytes from the OS: cancel secrets and login scrambles are what
/// stop strangers, so they must not be guessable.
class secrets {
public:
  uint32_t next() {
    std::lock_guard guard{mtx_};
    return device_();
  }

private:
  std::mutex mtx_;
  std::random_device device_;
};

} // namespace

wire::handler_factory make_pg_frontend(std::shared_ptr<node_services> node,
                                       bool tls_available) {
  auto next_pid = std::make_shared<std::atomic<int32_t>>(1000);
  auto random = std::make_shared<secrets>();
  return [node, next_pid, random,
          tls_available](std::shared_ptr<wire::connection> conn) {
    auto secret = static_cast<int32_t>(random->next());
    return make_pg_wire_session(node, std::move(conn), next_pid->fetch_add(1), secret,
                                tls_available);
  };
}

wire::handler_factory make_mysql_frontend(std::shared_ptr<node_services> node,
                                          bool tls_available) {
  auto next_id = std::make_shared<std::atomic<uint32_t>>(1);
  auto random = std::make_shared<secrets>();
  return [node, next_id, random, tls_available](std::shared_ptr<wire::connection> conn) {
    std::string scramble;
    while (scramble.size() < 20) {
      auto c = static_cast<char>(random->next() % 94 + 33); // printable, no NUL
      scramble += c;
    }
    auto session = node->sys->spawn(mysql_session, node, io_of(conn),
                                    next_id->fetch_add(1), scramble,
                                    tls_available);
    return std::make_shared<session_handler>(session);
  };
}

} // namespace qf::boundary
