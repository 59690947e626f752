// The HTTP routes of a node: Trino's client protocol on the trinoHttp port,
// health, readiness, metrics and the admin API on the admin port.
#pragma once

#include "actors/node/node.hpp"
#include "net/boundary/studio_sessions.hpp"
#include "net/http/types.hpp"

#include <memory>

namespace qf::boundary {

std::shared_ptr<http::handler>
make_trino_routes(std::shared_ptr<node_services> node);

/// An actor's {status, body} answer, handed on as the HTTP response.
trino_respond adapt(http::respond_fn respond);

/// While the node cannot start yet: /health 200, everything else 503
/// with the reason.
std::shared_ptr<http::handler> make_waiting_routes(std::string reason);

/// The admin port of a control plane or standalone: probes, metrics, the
/// admin API (HTTP Basic, or Studio's session), Studio, Trino Gateway's API
/// and (workerApi.enabled) the worker API.
std::shared_ptr<http::handler> make_admin_routes(std::shared_ptr<node_services> node,
                                                 config::admin_api credentials,
                                                 config::worker_api workers,
                                                 std::shared_ptr<studio_sessions> studio);

/// A worker's ops port: /health, /readyz, /metrics, /worker/status and
/// (peerBootstrap) /worker/peer-config behind the fleet's secret.
std::shared_ptr<http::handler> make_ops_routes(std::shared_ptr<node_services> node,
                                               config::node settings);

} // namespace qf::boundary
