// HTTP requests and responses as the boundary sees them: plain structs, so
// that route code never includes Beast (which costs a minute per TU here).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace qf::http {

struct request {
  std::string method; // "GET", "POST", ...
  std::string target; // path and query string
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  /// The first header of that name (case-insensitive), or "".
  std::string header(std::string_view name) const;
};

struct response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  /// When set, the body sent instead of `body`, without a copy: one
  /// snapshot's bytes serve every worker that asks for it.
  std::shared_ptr<const std::string> shared_body;
  std::vector<std::pair<std::string, std::string>> headers;
};

/// Called exactly once per request, from any thread. If every copy is
/// dropped without a call, the server answers 500 itself.
using respond_fn = std::function<void(response)>;

class handler {
public:
  virtual ~handler() = default;

  /// Must not throw and must not block.
  virtual void handle(request req, respond_fn respond) = 0;
};

/// A JSON error body: {"error": message}.
response error_response(int status, std::string_view message);

/// A plain-text answer (probes that their callers read as text).
response text_response(int status, std::string body);

} // namespace qf::http
