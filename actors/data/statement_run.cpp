#include "actors/data/statement_run.hpp"

#include "actors/data/query_books.hpp"
#include "actors/data/statement.hpp"

#include <caf/all.hpp>

namespace qf {

statement_run::statement_run(const std::shared_ptr<node_services>& node,
                             statement_spec spec,
                             std::function<void(statement_page)> on_page) {
  spec.page_sink = std::move(on_page);
  actor_ = spawn_statement(node, std::move(spec));
}

void statement_run::pull(uint32_t max_rows) const {
  caf::anon_send(actor_, atom::pull::value, max_rows);
}

void statement_run::cancel(bool abandoned) const {
  caf::anon_send(actor_, atom::cancel::value, abandoned);
}

void abandon_transaction(node_services& node, pinned_connection& pin) {
  caf::anon_send(pin.lease.actor, atom::execute::value,
                 statement_request{"ROLLBACK", {}, 1, {}});
  if (!pin.cluster->give_back(pin.lease))
    caf::anon_send(pin.cluster->actor, atom::release::value, pin.lease, false);
  give_back_slot(*node.stats, *pin.series, *pin.cluster);
}

} // namespace qf
