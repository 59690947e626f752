// Request target parsing.
#include "net/http/url.hpp"

#include "protocols/trino/client_session.hpp"

namespace qf::http {

std::vector<std::string> path_segments(std::string_view target) {
  auto path = target.substr(0, target.find('?'));
  std::vector<std::string> out;
  while (!path.empty()) {
    auto slash = path.find('/');
    if (slash != 0)
      out.emplace_back(path.substr(0, slash));
    if (slash == std::string_view::npos)
      break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

std::map<std::string, std::string> query_params(std::string_view target) {
  std::map<std::string, std::string> out;
  auto q = target.find('?');
  if (q == std::string_view::npos)
    return out;
  auto rest = target.substr(q + 1);
  while (!rest.empty()) {
    auto amp = rest.find('&');
    auto pair = rest.substr(0, amp);
    auto eq = pair.find('=');
    if (!pair.empty())
      out[trino::percent_decode(pair.substr(0, eq))]
        = eq == std::string_view::npos ? ""
                                       : trino::percent_decode(pair.substr(eq + 1));
    if (amp == std::string_view::npos)
      break;
    rest.remove_prefix(amp + 1);
  }
  return out;
}

} // namespace qf::http
