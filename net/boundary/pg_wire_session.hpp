// One PostgreSQL wire connection, driven on its wire thread: the pgwire
// state machine, and two ways to run a statement (wire_session_base has
// what it shares with the MySQL session).
//
// The fast lane takes a statement without a row limit (or any statement of
// a transaction block opened there) bound for a group of PostgreSQL
// clusters with nobody queued: it is admitted by a compare-and-swap on a
// slot (group_gate), sent on a pooled non-blocking libpq connection, and
// its answer comes back on this same thread. No thread hand-off: that is
// what a pooler like pgbouncer does, and what the speed goal needs
// (docs/performance.md).
//
// Everything else takes the actor path (statement_run): Execute row limits
// outside a block, which suspend a run; queueing for capacity (a block
// whose BEGIN queued stays there); and the other engines.
#pragma once

#include "net/boundary/session_timers.hpp"
#include "net/wire/tcp_server.hpp"

#include <chrono>
#include <cstdint>
#include <memory>

namespace qf {

struct node_services;

/// The handler of one connection; it registers itself for CancelRequest.
std::shared_ptr<wire::handler>
make_pg_wire_session(std::shared_ptr<node_services> node,
                     std::shared_ptr<wire::connection> conn, int32_t process_id,
                     int32_t secret_key, bool tls_available,
                     wire_session_limits limits);

} // namespace qf
