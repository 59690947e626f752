// Admin changes to the fleet from either API (ours, Trino Gateway's): one
// message to the node's config writer, the answer back as a callback.
#pragma once

#include "actors/control/config_writer.hpp"

#include <functional>
#include <memory>
#include <string>

namespace qf::boundary {

/// `done` gets the HTTP status and, for 200/201, the JSON body; otherwise
/// the reason.
using change_done = std::function<void(int status, std::string body)>;

void change_fleet(const std::shared_ptr<node_services>& node, fleet_request r, change_done done);

} // namespace qf::boundary
