// POST /webapp/findQueryHistory: the query history as Trino Gateway's web
// app asks for it and scripts written for it read it. Our records have
// more (status, timings, the worker): GET /admin/queries shows them all.
#include "net/boundary/trino_gateway_routes.hpp"

#include "net/http/url.hpp"

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

namespace qf::boundary {

namespace {

using nlohmann::json;

http::response tg_result(int code, std::string msg, json data) {
  http::response res;
  res.status = code == 200 ? 200 : code;
  res.body = json{{"code", code}, {"msg", std::move(msg)}, {"data", std::move(data)}}.dump(
    -1, ' ', false, json::error_handler_t::replace);
  return res;
}

std::string text_member(const json& body, const char* key) {
  auto it = body.find(key);
  return it != body.end() && it->is_string() ? it->get<std::string>() : std::string{};
}

/// Our page of records ({"total":N,"queries":[...]}) as Trino Gateway's
/// TableData of QueryDetail: backendUrl is the cluster's endpoint as the
/// active config has it.
json table_data(const std::string& page, const active_config* active) {
  auto ours = json::parse(page, nullptr, false);
  json rows = json::array();
  if (!ours.is_object())
    return json{{"total", 0}, {"rows", rows}};
  for (const auto& q : ours.value("queries", json::array())) {
    json backend_url = nullptr;
    if (active)
      for (const auto& c : active->config->clusters)
        if (c.name == q.value("clusterName", std::string{}))
          backend_url = proxy_to(c); // no passwords
    rows.push_back({
      {"queryId", q.value("proxyQueryId", std::string{})},
      {"queryText", q.value("sql", std::string{})},
      {"user", q.value("user", std::string{})},
      {"source", q.contains("source") ? q["source"] : json(nullptr)},
      {"backendUrl", backend_url},
      {"captureTime", q.value("createdAtMs", int64_t{0})},
      {"routingGroup", q.contains("clusterGroup") ? q["clusterGroup"] : json(nullptr)},
      {"externalUrl", q.contains("externalUrl") ? q["externalUrl"] : json(nullptr)},
      {"backendQueryId", q.contains("backendQueryId") ? q["backendQueryId"] : json(nullptr)},
    });
  }
  return json{{"total", ours.value("total", 0)}, {"rows", std::move(rows)}};
}

} // namespace

bool serve_webapp_history(const std::shared_ptr<node_services>& node, const http::request& req,
                          bool authorized, http::respond_fn& respond) {
  auto seg = http::path_segments(req.target);
  if (seg != std::vector<std::string>{"webapp", "findQueryHistory"})
    return false;
  if (!authorized) {
    auto res = http::error_response(401, "admin credentials required");
    res.headers.emplace_back("WWW-Authenticate", "Basic realm=\"queryflux\"");
    respond(std::move(res));
    return true;
  }
  if (req.method != "POST") {
    respond(http::error_response(405, "use POST"));
    return true;
  }
  auto body = req.body.empty() ? json::object() : json::parse(req.body, nullptr, false);
  if (!body.is_object()) {
    respond(tg_result(400, "the body must be a JSON object", nullptr));
    return true;
  }
  auto number = [&](const char* key, int64_t fallback) {
    auto it = body.find(key);
    return it != body.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
  };
  auto page = number("page", 1);
  auto size = number("size", 10);
  if (page < 1 || size < 1 || size > 10000) {
    respond(tg_result(400, "page: from 1; size: 1 to 10000", nullptr));
    return true;
  }
  history_filter f;
  f.user = text_member(body, "user");
  f.query_id = text_member(body, "queryId");
  f.source = text_member(body, "source");
  f.external_url = text_member(body, "externalUrl");
  f.limit = static_cast<size_t>(size);
  f.offset = static_cast<size_t>((page - 1) * size);
  auto backend_url = text_member(body, "backendUrl");
  auto active = node->snapshot->load();
  if (!backend_url.empty()) { // Trino Gateway's backends are our clusters
    if (active)
      for (const auto& c : active->config->clusters)
        if (c.endpoint == backend_url || proxy_to(c) == backend_url)
          f.cluster_name = c.name;
    if (f.cluster_name.empty()) { // no cluster has that endpoint (now)
      respond(tg_result(200, "Successful.", json{{"total", 0}, {"rows", json::array()}}));
      return true;
    }
  }
  auto shape = [respond, active](int status, std::string ours) {
    if (status != 200)
      return respond(tg_result(status, "the query history cannot be read", nullptr));
    respond(tg_result(200, "Successful.", table_data(ours, active.get())));
  };
  if (!node->history_store) {
    shape(200, node->history->list(f));
    return true;
  }
  caf::anon_send(node->history_store, atom::get::value, std::move(f),
                 admin_respond{[shape](trino_reply r) { shape(r.http_status, std::move(r.body)); }});
  return true;
}

} // namespace qf::boundary
