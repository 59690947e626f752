// The actor path, for a session that is not an actor: the PostgreSQL wire
// session lives on its socket's thread, and sends here whatever its fast
// lane does not take (transactions, queueing, row limits, other engines).
#pragma once

#include "actors/data/statement_spec.hpp"
#include "actors/node/node.hpp"

#include <caf/actor.hpp>

#include <functional>
#include <memory>

namespace qf {

class statement_run {
public:
  /// Spawns the statement actor. Pages go to `on_page` on an actor's
  /// thread, one per pull(); the receiver moves them to its own.
  statement_run(const std::shared_ptr<node_services>& node, statement_spec spec,
                std::function<void(statement_page)> on_page);

  /// The next page, of at most max_rows rows.
  void pull(uint32_t max_rows) const;

  /// Cancels it; abandoned: its client left (a transaction rolls back).
  void cancel(bool abandoned) const;

private:
  caf::actor actor_;
};

/// The client left inside a transaction: roll it back, pool the
/// connection, free the slot.
void abandon_transaction(node_services& node, pinned_connection& pin);

} // namespace qf
