// The control plane's lease calls (POST /worker/capacity/acquire, release,
// renew): each body becomes a message to the lease table, its answer (or
// error) the response. The secret is checked by serve_worker_api first.
#pragma once

#include "actors/node/node.hpp"
#include "net/http/types.hpp"

namespace qf::boundary {

/// seg: worker, capacity, <verb>.
void serve_capacity(const std::shared_ptr<node_services>& node, const http::request& req,
                    const std::vector<std::string>& seg, http::respond_fn respond);

} // namespace qf::boundary
