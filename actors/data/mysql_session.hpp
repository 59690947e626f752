// The SESSION actor of a MySQL wire connection: drives the mysqlwire state
// machine, checks logins against static users, and runs each query through
// a statement actor (routing, admission, engine, history).
#pragma once

#include "actors/core/messages.hpp"
#include "actors/node/node.hpp"
#include "protocols/mysqlwire/session.hpp"

#include <caf/stateful_actor.hpp>

#include <memory>

namespace qf {

struct mysql_session_state {
  static inline const char* name = "mysql-session";
  std::shared_ptr<node_services> node;
  wire_io io;
  std::string scramble;
  std::unique_ptr<mysqlwire::server_session> session;
  std::string user;
  uint32_t connection_id = 0; // what KILL names this session by
  caf::actor statement; // the running statement, if any
  bool columns_sent = false;
};

/// Handlers: (data, bytes): input from the client; (tls): the TLS
/// handshake the session asked for is done; (cancel, close): a KILL from
/// another session. Exits when the client
/// goes, cancelling its running statement.
caf::behavior mysql_session(caf::stateful_actor<mysql_session_state>* self,
                            std::shared_ptr<node_services> node, wire_io io,
                            uint32_t connection_id, std::string scramble,
                            bool tls_available);

} // namespace qf
