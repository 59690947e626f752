// One finished query, as history keeps it: in memory, in query_records, and
// on its way from a worker to the control plane.
#pragma once

#include <cstdint>
#include <string>

namespace qf {

struct query_record {
  std::string proxy_query_id;
  std::string user;
  std::string source;
  std::string catalog;
  std::string schema;
  std::string cluster_group;
  std::string cluster_name;
  std::string engine_type;
  std::string protocol;
  std::string sql;
  std::string status; // Success, Failed, Cancelled, Denied
  std::string error_message;
  std::string routing_trace; // JSON
  /// The worker that ran it; empty for a control plane's or a standalone
  /// node's own queries. Set by the control plane from the authenticated
  /// worker, never taken from what the worker sent.
  std::string worker;
  /// The engine's own id of the query (Trino's), and where people open
  /// its cluster (externalUrl): Trino's page of it is
  /// <external_url>/ui/query.html?<backend_query_id>.
  std::string backend_query_id;
  std::string external_url;
  int64_t created_at_ms = 0; // Unix epoch
  int64_t started_at_ms = 0; // execution start, 0 if it never ran
  int64_t finished_at_ms = 0;
  int64_t queue_duration_ms = 0;
  int64_t execution_duration_ms = 0;
  int64_t rows_returned = 0;
  /// Fingerprints of the SQL as sent and of its shape (literals masked):
  /// protocols/sql/literals. 0 until computed, by whoever writes the
  /// record down or sends it on.
  int64_t query_hash = 0;
  int64_t query_parameterized_hash = 0;
};

} // namespace qf
