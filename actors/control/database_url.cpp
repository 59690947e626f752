#include "actors/control/database_url.hpp"

namespace qf {

std::string with_timeouts(const std::string& url, int statement_timeout_ms) {
  std::string out = url;
  auto add = [&](const std::string& key, const std::string& value) {
    auto query = out.find('?');
    if (query != std::string::npos
        && (out.find("?" + key + "=", query) != std::string::npos
            || out.find("&" + key + "=", query) != std::string::npos))
      return; // the operator's own choice stands
    out += query == std::string::npos ? '?' : '&';
    out += key + "=" + value;
  };
  add("connect_timeout", "10");
  if (statement_timeout_ms > 0)
    add("options", "-c%20statement_timeout%3D" + std::to_string(statement_timeout_ms));
  return out;
}

} // namespace qf
