// The postgresWire listener's connections -> PostgreSQL session actors.
#pragma once

#include "actors/node/node.hpp"
#include "net/wire/tcp_server.hpp"

namespace qf::boundary {

wire::handler_factory make_pg_frontend(std::shared_ptr<node_services> node,
                                       bool tls_available);

} // namespace qf::boundary
