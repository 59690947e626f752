// Trino's client protocol (/v1/statement): the QueryResults JSON document
// that trino-client and presto-client decode. Pure: no IO, no clock.
#pragma once

#include "protocols/common/rows.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace qf::trino {

/// Error codes as Trino's StandardErrorCode numbers them.
struct error_code {
  int code;
  const char* name;
  const char* type; // USER_ERROR, INTERNAL_ERROR, INSUFFICIENT_RESOURCES
};

namespace errors {
inline constexpr error_code generic_user_error{0, "GENERIC_USER_ERROR",
                                               "USER_ERROR"};
inline constexpr error_code syntax_error{1, "SYNTAX_ERROR", "USER_ERROR"};
inline constexpr error_code abandoned_query{2, "ABANDONED_QUERY", "USER_ERROR"};
inline constexpr error_code user_canceled{3, "USER_CANCELED", "USER_ERROR"};
inline constexpr error_code permission_denied{4, "PERMISSION_DENIED",
                                              "USER_ERROR"};
inline constexpr error_code generic_internal_error{65536,
                                                   "GENERIC_INTERNAL_ERROR",
                                                   "INTERNAL_ERROR"};
inline constexpr error_code no_nodes_available{65541, "NO_NODES_AVAILABLE",
                                               "INTERNAL_ERROR"};
inline constexpr error_code server_shutting_down{65545, "SERVER_SHUTTING_DOWN",
                                                 "INTERNAL_ERROR"};
inline constexpr error_code server_starting_up{65548, "SERVER_STARTING_UP",
                                               "INTERNAL_ERROR"};
inline constexpr error_code query_queue_full{131074, "QUERY_QUEUE_FULL",
                                             "INSUFFICIENT_RESOURCES"};
inline constexpr error_code exceeded_time_limit{131075, "EXCEEDED_TIME_LIMIT",
                                                "INSUFFICIENT_RESOURCES"};
} // namespace errors

struct query_error {
  std::string message;
  error_code code = errors::generic_internal_error;
};

/// States as Trino reports them in stats.state.
enum class query_state { queued, running, finished, failed };

struct query_stats {
  query_state state = query_state::queued;
  int64_t queued_ms = 0;
  int64_t elapsed_ms = 0;
  int64_t processed_rows = 0;
};

/// One response to POST /v1/statement or a nextUri GET.
/// A warning beside a query's results: the backend's notices (PostgreSQL's
/// RAISE NOTICE), named by severity.
struct warning {
  std::string name; // NOTICE, WARNING...
  std::string message;
};

struct results_page {
  std::string id;
  std::string info_uri;
  std::string next_uri; // empty: the last page
  const std::vector<column>* columns = nullptr; // null until known
  const row_batch* rows = nullptr;              // null: no "data" key
  size_t first_row = 0;
  size_t row_count = 0;
  query_stats stats;
  std::optional<query_error> error;
  const std::vector<warning>* warnings = nullptr; // all so far, as Trino sends them
};

std::string encode(const results_page& page);

/// Trino's name for a type: "bigint", "decimal(10,2)", "timestamp(6)".
std::string type_name(const sql_type& t);

/// Appends one cell as Trino's JSON encodes it for the column's type.
void append_value(std::string& out, const sql_type& t, const cell& value);

} // namespace qf::trino
