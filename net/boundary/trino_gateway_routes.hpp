// Trino Gateway's REST paths on the admin port, mapped onto our clusters
// (routingGroup: the cluster's first group), so that scripts written for
// Trino Gateway keep working: livez/readyz, /gateway/backend/*,
// /api/public/backends and /webapp/findQueryHistory.
#pragma once

#include "actors/node/node.hpp"
#include "net/http/types.hpp"

namespace qf::boundary {

/// A cluster's proxyTo as Trino Gateway shows it: its endpoint without a
/// password.
std::string proxy_to(const config::cluster& c);

/// The node's metrics in Prometheus's text format.
http::response metrics_page(const node_services& node, const http::request& req);

/// Trino Gateway's probes (/trino-gateway/livez, /trino-gateway/readyz)
/// and /metrics. Trino Gateway serves one port, so its users' probes and
/// scrape configs point at the Trino port: they are answered there as on
/// the admin port. False when req is none of them.
bool serve_probes(const std::shared_ptr<node_services>& node, const http::request& req,
                  http::respond_fn& respond);

/// POST /webapp/findQueryHistory (admin credentials): the query history in
/// Trino Gateway's shape, {code, msg, data: {total, rows}}; false for any
/// other path (net/boundary/trino_gateway_history.cpp).
bool serve_webapp_history(const std::shared_ptr<node_services>& node, const http::request& req,
                          bool authorized, http::respond_fn& respond);

/// Answers req when it is one of Trino Gateway's paths; false otherwise.
/// `authorized`: the request carries the admin credentials (the /gateway
/// paths need them, as Trino Gateway's API role; the public ones do not).
bool serve_trino_gateway(const std::shared_ptr<node_services>& node,
                         const http::request& req, bool authorized,
                         http::respond_fn& respond);

} // namespace qf::boundary
