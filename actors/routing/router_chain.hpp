// The ordered router chain: first Route or Deny wins, else routingFallback.
// Plain functions over the config; every decision keeps its trace.
#pragma once

#include "protocols/config/model.hpp"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace re2 {
class RE2;
}

namespace qf::routing {

/// What routers may look at.
struct route_request {
  config::protocol protocol = config::protocol::trino_http;
  std::string user;
  std::map<std::string, std::string> headers; // names lowercased
  std::map<std::string, std::optional<std::string>> tags;
  std::string sql;
};

struct trace_step {
  std::string router; // the router's type as the config names it
  bool matched = false;
  std::string result; // the group, or the deny message
};

struct decision {
  std::string group; // empty when denied
  bool denied = false;
  std::string deny_message;
  bool used_fallback = false;
  std::vector<trace_step> trace;
};

class router_chain {
public:
  /// Compiles regexes once; the config must have passed validation.
  router_chain(const std::vector<config::router>& routers,
               std::string routing_fallback);
  ~router_chain();

  router_chain(const router_chain&) = delete;
  router_chain& operator=(const router_chain&) = delete;

  decision route(const route_request& req) const;

private:
  std::vector<config::router> routers_;
  std::vector<std::vector<std::unique_ptr<re2::RE2>>> regexes_;
  std::string fallback_;
};

/// {"decisions":[...],"finalGroup":...,"usedFallback":...,"denied":...}
std::string trace_to_json(const decision& d);

} // namespace qf::routing
