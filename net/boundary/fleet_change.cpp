#include "net/boundary/fleet_change.hpp"

#include <caf/send.hpp>

namespace qf::boundary {

void change_fleet(const std::shared_ptr<node_services>& node, fleet_request r, change_done done) {
  caf::anon_send(node->config_writer, atom::update::value, std::move(r),
                 admin_respond{[done = std::move(done)](trino_reply reply) {
                   done(reply.http_status, std::move(reply.body));
                 }});
}

} // namespace qf::boundary
