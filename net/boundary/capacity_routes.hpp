// The control plane's lease calls (POST /worker/capacity/acquire, release,
// renew) and sweep-lock calls (POST /worker/sweep-lock/acquire, release,
// publish; GET /worker/sweep-lock/counts): each body becomes a message to
// the lease table, its answer (or error) the response. The secret is
// checked by serve_worker_api first.
#pragma once

#include "actors/node/node.hpp"
#include "net/http/types.hpp"

namespace qf::boundary {

/// seg: worker, capacity, <verb>.
void serve_capacity(const std::shared_ptr<node_services>& node, const http::request& req,
                    const std::vector<std::string>& seg, http::respond_fn respond);

/// seg: worker, sweep-lock, <verb>.
void serve_sweep_lock(const std::shared_ptr<node_services>& node, const http::request& req,
                      const std::vector<std::string>& seg, http::respond_fn respond);

} // namespace qf::boundary
