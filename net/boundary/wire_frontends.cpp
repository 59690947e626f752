// The wire frontends' sessions, both on the wire thread: PostgreSQL's
// (pg_wire_session) and MySQL's (mysql_wire_session).
#include "net/boundary/wire_frontends.hpp"

#include "net/boundary/mysql_wire_session.hpp"
#include "net/boundary/pg_wire_session.hpp"
#include "net/boundary/secure_random.hpp"


#include <array>
#include <cstdint>

namespace qf::boundary {

wire::handler_factory make_pg_frontend(std::shared_ptr<node_services> node, bool tls_available,
                                       wire_session_limits limits) {
  auto next_pid = std::make_shared<std::atomic<int32_t>>(1000);
  return [node, next_pid, tls_available, limits](std::shared_ptr<wire::connection> conn) {
    auto secret = random_value<int32_t>();
    return make_pg_wire_session(node, std::move(conn), next_pid->fetch_add(1), secret,
                                tls_available, limits);
  };
}

wire::handler_factory make_mysql_frontend(std::shared_ptr<node_services> node,
                                          bool tls_available, wire_session_limits limits) {
  auto next_id = std::make_shared<std::atomic<uint32_t>>(1);
  return [node, next_id, tls_available, limits](std::shared_ptr<wire::connection> conn) {
    auto bytes = random_value<std::array<uint8_t, 20>>();
    std::string scramble;
    for (auto b : bytes)
      scramble += static_cast<char>(b % 94 + 33); // printable, no NUL
    return make_mysql_wire_session(node, std::move(conn), next_id->fetch_add(1),
                                   std::move(scramble), tls_available, limits);
  };
}

} // namespace qf::boundary
