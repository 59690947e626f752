// The wire frontends' sessions, both on the wire thread: PostgreSQL's
// (pg_wire_session) and MySQL's (mysql_wire_session).
#include "net/boundary/wire_frontends.hpp"

#include "net/boundary/mysql_wire_session.hpp"
#include "net/boundary/pg_wire_session.hpp"

#include <random>

namespace qf::boundary {

namespace {

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

wire::handler_factory make_pg_frontend(std::shared_ptr<node_services> node, bool tls_available,
                                       std::chrono::milliseconds startup_timeout) {
  auto next_pid = std::make_shared<std::atomic<int32_t>>(1000);
  auto random = std::make_shared<secrets>();
  return [node, next_pid, random, tls_available,
          startup_timeout](std::shared_ptr<wire::connection> conn) {
    auto secret = static_cast<int32_t>(random->next());
    return make_pg_wire_session(node, std::move(conn), next_pid->fetch_add(1), secret,
                                tls_available, startup_timeout);
  };
}

wire::handler_factory make_mysql_frontend(std::shared_ptr<node_services> node,
                                          bool tls_available,
                                          std::chrono::milliseconds startup_timeout) {
  auto next_id = std::make_shared<std::atomic<uint32_t>>(1);
  auto random = std::make_shared<secrets>();
  return [node, next_id, random, tls_available,
          startup_timeout](std::shared_ptr<wire::connection> conn) {
    std::string scramble;
    while (scramble.size() < 20) {
      auto c = static_cast<char>(random->next() % 94 + 33); // printable, no NUL
      scramble += c;
    }
    return make_mysql_wire_session(node, std::move(conn), next_id->fetch_add(1),
                                   std::move(scramble), tls_available, startup_timeout);
  };
}

} // namespace qf::boundary
