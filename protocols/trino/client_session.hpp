// What a Trino client says about itself in X-Trino-* and Authorization
// headers, read from (lowercased name, value) pairs.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace qf::trino {

struct client_session {
  std::string user;
  std::string basic_user; // from Authorization: Basic
  std::string password;   // from Authorization: Basic, when present
  bool has_password = false;
  std::string catalog;
  std::string schema;
  std::string source;
  /// X-Trino-Client-Tags (key only) and query_tags of X-Trino-Session.
  std::map<std::string, std::optional<std::string>> tags;
  std::map<std::string, std::string> session_properties;
  /// Every header, name lowercased; what the header router reads.
  std::map<std::string, std::string> headers;
};

/// Never fails: malformed optional headers are ignored, as Trino does.
client_session parse_client_session(
  const std::vector<std::pair<std::string, std::string>>& headers);

/// Decodes %XX escapes and '+' as Trino's session header values use them.
std::string percent_decode(std::string_view s);

} // namespace qf::trino
