// One MySQL wire connection, driven on its wire thread: the mysqlwire
// state machine, and two ways to run a statement, as for PostgreSQL
// (pg_wire_session; wire_session_base has what the two share).
//
// The fast lane takes a statement bound for a group of MySQL clusters with
// nobody queued: admitted by a compare-and-swap on a slot (group_gate),
// run on a pooled non-blocking MariaDB connection (mysql_async_connection),
// its rows back on this same thread. Everything else (queueing for
// capacity, the other engines) takes the actor path (statement_run).
#pragma once

#include "net/boundary/session_timers.hpp"
#include "net/wire/tcp_server.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace qf {

struct node_services;

/// The handler of one connection; it registers itself for KILL once the
/// client logged in.
std::shared_ptr<wire::handler>
make_mysql_wire_session(std::shared_ptr<node_services> node,
                        std::shared_ptr<wire::connection> conn, uint32_t connection_id,
                        std::string scramble, bool tls_available,
                        wire_session_limits limits);

} // namespace qf
