// Trino Gateway's REST paths on the admin port, mapped onto our clusters
// (routingGroup: the cluster's first group), so that scripts written for
// Trino Gateway keep working: livez/readyz, /gateway/backend/*, and
// /api/public/backends.
#pragma once

#include "actors/node/node.hpp"
#include "net/http/types.hpp"

#include <functional>

namespace qf::boundary {

/// Answers req when it is one of Trino Gateway's paths; false otherwise.
/// `authorized`: the request carries the admin credentials (the /gateway
/// paths need them, as Trino Gateway's API role; the public ones do not).
bool serve_trino_gateway(const std::shared_ptr<node_services>& node,
                         const http::request& req, bool authorized,
                         http::respond_fn& respond);

/// Activates or deactivates a cluster: out of routing at once, then the
/// cluster actor moves its health (UNKNOWN, or PENDING and a check now).
/// With PostgreSQL persistence the database is written first. `done` gets
/// 200, 404 (no such cluster), 500 or 503, and a message.
void set_cluster_active(const std::shared_ptr<node_services>& node, const std::string& name,
                        bool on, std::function<void(int, std::string)> done);

} // namespace qf::boundary
