// The SESSION actor of a PostgreSQL wire connection: drives the pgwire
// state machine, runs each statement through a statement actor (routing,
// admission, engine, history) and streams its rows back.
#pragma once

#include "actors/core/messages.hpp"
#include "actors/node/node.hpp"
#include "protocols/pgwire/session.hpp"

#include <caf/stateful_actor.hpp>

#include <memory>
#include <optional>

namespace qf {

struct pg_session_state {
  static inline const char* name = "pg-session";
  std::shared_ptr<node_services> node;
  wire_io io;
  std::unique_ptr<pgwire::server_session> session;
  std::string cancel_key; // "pid:secret" in the node's cancel registry
  caf::actor statement;   // the running statement, if any
  caf::actor suspended;   // a run stopped at an Execute's row limit
  bool columns_sent = false;
  pgwire::transaction_step step = pgwire::transaction_step::none;
  /// Between the statements of a transaction block: its connection.
  std::optional<pinned_connection> pinned;
};

/// Handlers:
/// - (data, bytes): input from the client;
/// - (cancel, bool): a CancelRequest named this session;
/// - (tls): the TLS handshake the session asked for is done.
/// Exits when the client goes, cancelling its running statement.
caf::behavior pg_session(caf::stateful_actor<pg_session_state>* self,
                         std::shared_ptr<node_services> node, wire_io io,
                         int32_t process_id, int32_t secret_key,
                         bool tls_available);

} // namespace qf
