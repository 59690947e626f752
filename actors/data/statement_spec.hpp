// What a frontend hands a statement actor: the statement, who sent it and
// how, and where a transaction stands.
#pragma once

#include "actors/core/messages.hpp"
#include "actors/data/query_registry.hpp"
#include "protocols/config/model.hpp"
#include "protocols/trino/client_session.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace qf {

struct statement_spec {
  std::string id;
  /// Trino HTTP: the secret part of the nextUri (as Trino's slug), so that
  /// knowing a query's id (they are sequential) does not let anyone read
  /// its results or cancel it.
  std::string slug;
  uint64_t ticket = 0;
  /// Trino HTTP: where nextUri and infoUri point (externalAddress, else the
  /// address the client used), as http(s)://host[:port].
  std::string base_address;
  std::string sql;
  engines::parameters params; // for $1, $2... (wire protocols)
  trino::client_session session;
  /// The frontend it came through: routing, history and metrics use it.
  config::protocol protocol = config::protocol::trino_http;
  /// Published for the reaper (Trino HTTP only; wire sessions own theirs).
  std::shared_ptr<query_liveness> live;
  /// What the admin API shows while it runs.
  std::shared_ptr<query_summary> summary;
  /// Inside a transaction: run on this connection, skipping routing and
  /// admission (the transaction holds the slot).
  std::optional<pinned_connection> pinned;
  /// Hand the connection and slot back with the last page instead of
  /// releasing them: the transaction goes on.
  bool keep_pinned = false;
  /// A wire session's fast lane waits here for a slot and runs the
  /// statement itself: once admitted, the only page carries the slot
  /// (statement_page::admitted) and nothing runs or is recorded here.
  bool admit_only = false;
  /// Admitted on this member of the group only (its name): the session's
  /// own state lives on a connection there.
  std::string only_cluster;
  /// For sessions that are not actors: where (pull, max_rows) sends its
  /// page, from the actor's thread.
  std::function<void(statement_page)> page_sink;
};

} // namespace qf
