#include "net/boundary/trino_gateway_routes.hpp"

#include "net/boundary/fleet_change.hpp"
#include "protocols/config/fleet_edit.hpp"
#include "net/http/url.hpp"
#include "protocols/common/json_writer.hpp"

#include <caf/send.hpp>

namespace qf::boundary {

namespace {

http::response json(std::string body) {
  http::response res;
  res.body = std::move(body);
  return res;
}


std::string routing_group(const config::gateway_config& cfg, const std::string& cluster) {
  for (const auto& g : cfg.groups)
    for (const auto& m : g.members)
      if (m == cluster)
        return g.name;
  return "";
}

/// ProxyBackendConfiguration: {name, proxyTo, externalUrl, active, routingGroup}.
void append_backend(std::string& out, const active_config& active, const config::cluster& c) {
  auto url = proxy_to(c);
  out += "{\"name\":";
  json_text::append_string(out, c.name);
  out += ",\"proxyTo\":";
  json_text::append_string(out, url);
  out += ",\"externalUrl\":";
  json_text::append_string(out, c.external_url.empty() ? url : c.external_url);
  out += ",\"active\":";
  out += active.clusters.at(c.name)->enabled.load() ? "true" : "false";
  out += ",\"routingGroup\":";
  json_text::append_string(out, routing_group(*active.config, c.name));
  out += '}';
}

std::string backends(const active_config& active, bool active_only) {
  std::string out = "[";
  for (const auto& c : active.config->clusters) {
    if (active_only && !active.clusters.at(c.name)->enabled.load())
      continue;
    if (out.size() > 1)
      out += ',';
    append_backend(out, active, c);
  }
  return out + "]";
}

/// ClusterStats: what the health cache knows of one cluster.
std::string cluster_stats(const active_config& active, const config::cluster& c) {
  const auto& st = *active.clusters.at(c.name);
  auto queued = st.queued();
  auto url = proxy_to(c);
  std::string out = "{\"clusterId\":";
  json_text::append_string(out, c.name);
  out += ",\"runningQueryCount\":" + std::to_string(st.running());
  out += ",\"queuedQueryCount\":" + std::to_string(queued);
  out += ",\"numWorkerNodes\":0,\"trinoStatus\":\"";
  out += to_string(st.status.load());
  out += "\",\"proxyTo\":";
  json_text::append_string(out, url);
  out += ",\"externalUrl\":";
  json_text::append_string(out, c.external_url.empty() ? url : c.external_url);
  out += ",\"routingGroup\":";
  json_text::append_string(out, routing_group(*active.config, c.name));
  out += ",\"userQueuedCount\":{}}";
  return out;
}

const config::cluster* find(const active_config& active, const std::string& name) {
  for (const auto& c : active.config->clusters)
    if (c.name == name)
      return &c;
  return nullptr;
}

} // namespace

/// Where a cluster is, without its password.
std::string proxy_to(const config::cluster& c) {
  switch (c.engine) {
    case config::engine_kind::duck_db:
      return "duckdb:" + (c.database_path.empty() ? std::string{":memory:"} : c.database_path);
    case config::engine_kind::sqlite:
      return "sqlite:" + (c.database_path.empty() ? std::string{":memory:"} : c.database_path);
    default:
      break;
  }
  if (c.endpoint.empty()) {
    auto scheme = c.engine == config::engine_kind::mysql ? "mysql://" : "postgres://";
    return scheme + c.host + (c.port ? ":" + std::to_string(c.port) : "") + "/" + c.database;
  }
  return config::masked_url(c.endpoint);
}

http::response metrics_page(const node_services& node, const http::request& req) {
  http::response res;
  // Prometheus asks for OpenMetrics first; curl and older scrapers get
  // the classic format.
  if (req.header("accept").find("application/openmetrics-text") != std::string::npos) {
    res.content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8";
    res.body = node.stats->render_openmetrics();
    return res;
  }
  res.content_type = "text/plain; version=0.0.4; charset=utf-8";
  res.body = node.stats->render();
  return res;
}

bool serve_probes(const std::shared_ptr<node_services>& node, const http::request& req,
                  http::respond_fn& respond) {
  if (req.method != "GET")
    return false;
  auto seg = http::path_segments(req.target);
  if (seg == std::vector<std::string>{"metrics"}) {
    respond(metrics_page(*node, req));
    return true;
  }
  if (seg.size() != 2 || seg[0] != "trino-gateway")
    return false;
  if (seg[1] == "livez") {
    respond(http::text_response(200, "ok"));
    return true;
  }
  if (seg[1] == "readyz") {
    respond(node->ready() ? http::text_response(200, "ok")
                          : http::text_response(503, "QueryFlux is still initializing"));
    return true;
  }
  return false;
}

bool serve_trino_gateway(const std::shared_ptr<node_services>& node,
                         const http::request& req, bool authorized,
                         http::respond_fn& respond) {
  if (serve_probes(node, req, respond))
    return true;
  auto seg = http::path_segments(req.target);
  bool get = req.method == "GET";
  bool post = req.method == "POST";
  if (serve_webapp_history(node, req, authorized, respond))
    return true;
  bool gateway_api = !seg.empty() && seg[0] == "gateway";
  bool public_api = seg.size() >= 3 && seg[0] == "api" && seg[1] == "public" && seg[2] == "backends";
  if (!gateway_api && !public_api)
    return false;
  if (gateway_api && !authorized) {
    auto res = http::error_response(401, "admin credentials required");
    res.headers.emplace_back("WWW-Authenticate", "Basic realm=\"queryflux\"");
    respond(std::move(res));
    return true;
  }
  auto active = node->snapshot->load();
  if (!active) {
    respond(http::text_response(503, "QueryFlux is still initializing"));
    return true;
  }
  if (gateway_api) {
    if (seg.size() == 1 && get)
      respond(http::text_response(200, "ok"));
    else if (seg.size() == 3 && seg[1] == "backend" && get && (seg[2] == "all" || seg[2] == "active"))
      respond(json(backends(*active, seg[2] == "active")));
    else if (seg.size() == 4 && seg[1] == "backend" && post
             && (seg[2] == "activate" || seg[2] == "deactivate")) {
      fleet_request r;
      r.what = fleet_request::op::set_enabled;
      r.name = seg[3];
      r.on = seg[2] == "activate";
      change_fleet(node, std::move(r), [respond](int status, std::string message) {
        // Trino Gateway answers a failed (de)activation 404 with its message.
        respond(status == 200 ? http::text_response(200, "")
                              : http::text_response(404, std::move(message)));
      });
    } else if (seg.size() == 4 && seg[1] == "backend" && seg[2] == "modify" && post
               && (seg[3] == "add" || seg[3] == "update" || seg[3] == "delete")) {
      fleet_request r;
      if (seg[3] == "delete") {
        r.what = fleet_request::op::erase_backend;
        r.name = req.body;
        // `-d trino3` comes raw; a JSON string is taken too.
        if (r.name.size() >= 2 && r.name.front() == '"' && r.name.back() == '"')
          r.name = r.name.substr(1, r.name.size() - 2);
      } else {
        r.what = fleet_request::op::put_backend;
        r.body = req.body;
        r.on = seg[3] == "add";
      }
      change_fleet(node, std::move(r), [respond](int status, std::string body) {
        if (status < 300)
          return respond(json(std::move(body)));
        respond(http::text_response(status, std::move(body)));
      });
    } else
      respond(http::error_response(404, "no such resource: " + req.target));
    return true;
  }
  // /api/public/backends[/{name}[/state]]
  if (!get) {
    respond(http::error_response(405, "only GET here"));
    return true;
  }
  if (seg.size() == 3) {
    respond(json(backends(*active, false)));
    return true;
  }
  const auto* c = find(*active, seg[3]);
  if (!c || seg.size() > 5 || (seg.size() == 5 && seg[4] != "state")) {
    respond(http::text_response(404, "no cluster named " + seg[3]));
    return true;
  }
  if (seg.size() == 5) {
    respond(json(cluster_stats(*active, *c)));
  } else {
    std::string out;
    append_backend(out, *active, *c);
    respond(json(std::move(out)));
  }
  return true;
}

} // namespace qf::boundary
