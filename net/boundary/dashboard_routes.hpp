// What Studio's dashboard reads beside the rest of the admin API: the
// groups as admission sees them, and queries per minute.
#pragma once

#include "actors/node/node.hpp"
#include "net/http/types.hpp"

#include <memory>

namespace qf::boundary {

/// GET /admin/groups.
void serve_groups(const std::shared_ptr<node_services>& node, const http::respond_fn& respond);

/// GET /admin/queries/stats?minutes=N.
void serve_query_stats(const std::shared_ptr<node_services>& node, const http::request& req,
                       const http::respond_fn& respond);

} // namespace qf::boundary
