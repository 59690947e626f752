// One PostgreSQL wire connection, driven on the wire thread: the
// pgwire state machine, and two ways to run a statement.
//
// The fast lane takes an autocommit statement without a row limit bound
// for a group of PostgreSQL clusters with nobody queued: it is admitted by
// a compare-and-swap on a slot (group_gate), sent on a pooled non-blocking
// libpq connection, and its rows come back on this same thread. No thread
// hand-off: that is what a pooler like pgbouncer does, and what the speed
// goal needs (docs/performance.md).
//
// Everything else takes the actor path (statement_run): transactions,
// which pin a backend connection; Execute row limits, which suspend a run;
// queueing for capacity; and the other engines.
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
