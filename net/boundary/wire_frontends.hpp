// The wire listeners' connections -> session actors (one per connection):
// PostgreSQL and MySQL.
#pragma once

#include "actors/node/node.hpp"
#include "net/boundary/session_timers.hpp"
#include "net/wire/tcp_server.hpp"

namespace qf::boundary {

wire::handler_factory make_pg_frontend(std::shared_ptr<node_services> node, bool tls_available,
                                       wire_session_limits limits);

wire::handler_factory make_mysql_frontend(std::shared_ptr<node_services> node,
                                          bool tls_available, wire_session_limits limits);

} // namespace qf::boundary
