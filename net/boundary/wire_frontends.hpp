// The wire listeners' connections -> session actors (one per connection):
// PostgreSQL and MySQL.
#pragma once

#include "actors/node/node.hpp"
#include "net/wire/tcp_server.hpp"

namespace qf::boundary {

/// startup_timeout: a connection not logged in by then is closed.
wire::handler_factory make_pg_frontend(std::shared_ptr<node_services> node, bool tls_available,
                                       std::chrono::milliseconds startup_timeout);

wire::handler_factory make_mysql_frontend(std::shared_ptr<node_services> node,
                                          bool tls_available,
                                          std::chrono::milliseconds startup_timeout);

} // namespace qf::boundary
