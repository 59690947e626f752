// The control plane's worker API on the admin port (/worker/*), and the
// admin API's view of the workers (/admin/workers). Requests become
// messages to the config store and the worker registry; their data
// becomes the responses.
#pragma once

#include "actors/node/node.hpp"
#include "net/http/types.hpp"

#include <string>
#include <vector>

namespace qf::boundary {

/// True when the workers' bearer secret is what `req` presents.
bool has_worker_secret(const http::request& req, const std::string& secret);

/// /worker/...: answers every path under it (404 for unknown ones).
void serve_worker_api(const std::shared_ptr<node_services>& node, const config::worker_api& api,
                      const http::request& req, const std::vector<std::string>& seg,
                      http::respond_fn respond);

/// GET /admin/workers and /admin/workers/{name} (already authorized).
void serve_admin_workers(const std::shared_ptr<node_services>& node, const http::request& req,
                         const std::vector<std::string>& seg, http::respond_fn respond);

/// 401 asking for the workers' bearer secret.
http::response bearer_required(std::string_view message);

/// POST /worker/query-records (already authorized): a worker's batch of
/// query records, stored once per proxy query id under the worker's name.
void ingest_query_records(const std::shared_ptr<node_services>& node, const http::request& req,
                          http::respond_fn respond);

/// An error with a code a worker acts on, beside the message.
http::response coded(int status, std::string_view code, std::string_view message);

/// A retryable 5xx: with Retry-After: 1.
http::response retry_later(int status, std::string_view message);

/// Appends s as a JSON string, or null when it is empty.
void append_string_or_null(std::string& out, const std::string& s);

/// Appends {"key":"value",...}.
void append_labels(std::string& out, const std::map<std::string, std::string>& labels);

/// Appends {"cluster":n,...} (slots held per cluster).
void append_counts(std::string& out, const std::map<std::string, uint32_t>& counts);

/// Milliseconds since the epoch as 2026-12-02T07:14:32.123Z.
std::string iso_time(int64_t ms);

} // namespace qf::boundary
