#include "net/boundary/pg_sqlstates.hpp"

namespace qf {

std::string sqlstate_for(const std::string& error_name) {
  if (error_name == "PERMISSION_DENIED")
    return "42501"; // insufficient_privilege: a routing rule denied it
  if (error_name == "QUERY_QUEUE_FULL")
    return "53300"; // too_many_connections
  if (error_name == "EXCEEDED_TIME_LIMIT")
    return "53400"; // configuration_limit_exceeded: capacity wait
  if (error_name == "USER_CANCELED" || error_name == "ABANDONED_QUERY")
    return "57014"; // query_canceled
  if (error_name == "NO_NODES_AVAILABLE")
    return "53000"; // insufficient_resources
  if (error_name == "SERVER_STARTING_UP")
    return "57P03"; // cannot_connect_now: no active configuration
  if (error_name == "SYNTAX_ERROR")
    return "42601";
  if (error_name == "GENERIC_USER_ERROR")
    return "42000";
  return "XX000";
}

std::string sqlstate_for(const engines::engine_error& e) {
  if (!e.sqlstate().empty())
    return e.sqlstate();
  switch (e.kind()) {
    case engines::error_kind::cancelled:
      return "57014";
    case engines::error_kind::syntax:
      return "42601";
    case engines::error_kind::user:
      return "42000";
    case engines::error_kind::internal:
      return "XX000";
  }
  return "XX000";
}

} // namespace qf
