// The admin port: liveness, readiness, Prometheus metrics (open), and the
// admin API (HTTP Basic with the configured credentials).
#include "net/boundary/routes.hpp"

#include "actors/data/group.hpp"
#include "net/boundary/dashboard_routes.hpp"
#include "net/boundary/fleet_change.hpp"
#include "net/boundary/studio_routes.hpp"
#include "net/boundary/trino_gateway_routes.hpp"
#include "net/boundary/worker_routes.hpp"
#include "net/http/url.hpp"
#include "protocols/common/json_writer.hpp"
#include "protocols/common/secrets.hpp"

#include <caf/send.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>

namespace qf::boundary {

namespace {

http::response json_ok(std::string body) {
  http::response res;
  res.body = std::move(body);
  return res;
}

int64_t to_int(const std::map<std::string, std::string>& params,
               const std::string& key, int64_t fallback) {
  auto i = params.find(key);
  if (i == params.end())
    return fallback;
  int64_t v = 0;
  auto [end, ec] = std::from_chars(i->second.data(),
                                   i->second.data() + i->second.size(), v);
  return ec == std::errc{} && v >= 0 ? v : fallback;
}

/// A 401 without its Basic challenge, for a page's own requests.
http::respond_fn without_challenge(http::respond_fn respond) {
  return [respond = std::move(respond)](http::response res) {
    if (res.status == 401)
      std::erase_if(res.headers, [](const auto& h) { return h.first == "WWW-Authenticate"; });
    respond(std::move(res));
  };
}

/// The paths behind the admin credentials (or Studio's session).
bool admin_path(const std::vector<std::string>& seg) {
  return !seg.empty()
         && (seg[0] == "admin" || seg[0] == "gateway" || seg[0] == "webapp" || seg[0] == "api");
}

class admin_routes : public http::handler {
public:
  admin_routes(std::shared_ptr<node_services> node, config::admin_api creds,
               config::worker_api workers, std::shared_ptr<studio_sessions> studio)
    : node_(std::move(node)),
      creds_(std::move(creds)),
      workers_(std::move(workers)),
      studio_(std::move(studio)),
      role_(node_->role == config::node_role::control_plane ? "controlPlane" : "standalone") {
    // nop
  }

  void handle(http::request req, http::respond_fn respond) override {
    auto seg = http::path_segments(req.target);
    bool get = req.method == "GET";
    if (get && seg.size() == 1 && seg[0] == "health")
      return respond(json_ok("{\"status\":\"UP\"}"));
    if (get && seg.size() == 1 && seg[0] == "readyz")
      return respond(readiness());
    if (!seg.empty() && seg[0] == "worker")
      return serve_worker_api(node_, workers_, req, seg, std::move(respond));
    if (studio_request(req))
      respond = without_challenge(std::move(respond));
    if (serve_studio(*studio_, role_, req, respond))
      return;
    auto who = access_of(req);
    if (who == access::forged && admin_path(seg))
      return respond(http::error_response(403, "missing or wrong CSRF token"));
    bool authorized = who == access::granted;
    if (serve_trino_gateway(node_, req, authorized, respond))
      return;
    if (!seg.empty() && seg[0] == "admin") {
      if (!authorized) {
        auto res = http::error_response(401, "admin credentials required");
        res.headers.emplace_back("WWW-Authenticate",
                                 "Basic realm=\"queryflux\"");
        return respond(std::move(res));
      }
      if (get && seg.size() == 2 && seg[1] == "queries")
        return list_queries(req.target, std::move(respond));
      if (get && seg.size() == 3 && seg[1] == "queries" && seg[2] == "stats")
        return serve_query_stats(node_, req, respond);
      if (get && seg.size() == 2 && seg[1] == "groups")
        return serve_groups(node_, respond);
      if (get && seg.size() == 3 && seg[1] == "queries" && seg[2] == "running")
        return respond(json_ok(running_queries()));
      if (get && seg.size() == 3 && seg[1] == "queries")
        return get_query(seg[2], std::move(respond));
      if (req.method == "DELETE" && seg.size() == 3 && seg[1] == "queries")
        return cancel_query(seg[2], std::move(respond));
      if (get && seg.size() == 2 && seg[1] == "clusters")
        return list_clusters(std::move(respond));
      if (get && seg.size() == 3 && seg[1] == "clusters")
        return get_cluster(seg[2], std::move(respond));
      if (req.method == "POST" && seg.size() == 4 && seg[1] == "clusters"
          && (seg[3] == "activate" || seg[3] == "deactivate")) {
        fleet_request r;
        r.what = fleet_request::op::set_enabled;
        r.name = seg[2];
        r.on = seg[3] == "activate";
        // The answer is the health cache's view, as GET /admin/clusters/{name}.
        return change_fleet(node_, std::move(r),
                            [this, respond, name = seg[2]](int status, std::string body) {
                              if (status >= 300)
                                return respond(http::error_response(status, body));
                              get_cluster(name, respond);
                            });
      }
      if (seg.size() >= 3 && seg[1] == "config")
        return config_api(req, seg, std::move(respond));
      if (seg.size() >= 2 && seg[1] == "workers")
        return serve_admin_workers(node_, req, seg, std::move(respond));
    }
    respond(http::error_response(404, "no such resource: " + req.target));
  }

private:
  /// forged: Studio's session, on a change without its CSRF token.
  enum class access { none, granted, forged };

  /// HTTP Basic with the admin credentials, or Studio's session.
  access access_of(const http::request& req) const {
    auto auth = req.header("authorization");
    std::string decoded;
    if (auth.rfind("Basic ", 0) == 0 && json_text::base64_decode(auth.substr(6), decoded)
        && secrets_equal(decoded, creds_.username + ":" + creds_.password))
      return access::granted;
    auto session = studio_->check(req.header("cookie"));
    if (!session)
      return access::none;
    return csrf_ok(*studio_, *session, req) ? access::granted : access::forged;
  }

  http::response readiness() const {
    auto res = json_ok(node_->ready() ? "{\"status\":\"READY\"}"
                                      : "{\"status\":\"NOT_READY\"}");
    if (!node_->ready())
      res.status = 503;
    return res;
  }

  void list_queries(const std::string& target, http::respond_fn respond) {
    auto p = http::query_params(target);
    history_filter f;
    f.search = p["search"];
    f.user = p["user"];
    f.cluster_group = p["group"];
    f.cluster_name = p["cluster"];
    f.status = p["status"];
    f.worker = p["worker"];
    f.query_id = p["queryId"]; // ours or the engine's
    f.source = p["source"];
    f.from_ms = to_int(p, "from", 0);
    f.to_ms = to_int(p, "to", 0);
    f.limit = static_cast<size_t>(std::min<int64_t>(to_int(p, "limit", 100),
                                                    10000));
    f.offset = static_cast<size_t>(to_int(p, "offset", 0));
    if (node_->history_store) // durable history: ask PostgreSQL
      return caf::anon_send(node_->history_store, atom::get::value, std::move(f),
                            adapt(std::move(respond)));
    respond(json_ok(node_->history->list(f)));
  }

  void get_query(const std::string& id, http::respond_fn respond) {
    auto from_ring = [node = node_, id](const http::respond_fn& reply) {
      if (auto record = node->history->get(id))
        return reply(json_ok(std::move(*record)));
      reply(http::error_response(404, "no query " + id));
    };
    if (!node_->history_store)
      return from_ring(respond);
    // A query that just finished may not be written yet: the ring has it.
    caf::anon_send(node_->history_store, atom::get::value, id,
                   admin_respond{[respond, from_ring](trino_reply r) {
                     if (r.http_status == 404)
                       return from_ring(respond);
                     adapt(respond)(std::move(r));
                   }});
  }

  /// Every statement between arrival and its end, from all frontends.
  std::string running_queries() const {
    std::string out = "[";
    for (const auto& s : node_->unfinished_statements()) {
      if (out.size() > 1)
        out += ',';
      out += "{\"id\":";
      json_text::append_string(out, s.id);
      out += ",\"submittedBy\":";
      json_text::append_string(out, s.user);
      out += ",\"protocol\":";
      json_text::append_string(out, s.protocol);
      out += ",\"group\":";
      json_text::append_string(out, s.group);
      out += ",\"cluster\":";
      json_text::append_string(out, s.cluster);
      out += ",\"state\":";
      json_text::append_string(out, s.state);
      out += ",\"sqlPreview\":";
      json_text::append_string(out, s.sql_preview);
      out += '}';
    }
    return out + "]";
  }

  void cancel_query(const std::string& id, http::respond_fn respond) {
    if (!node_->queries->cancel(id) && !node_->wire_statements->cancel(id)
        && !node_->wire_sessions->cancel_statement(id))
      return respond(http::error_response(404, "no running query " + id));
    std::string out = "{\"cancelled\":";
    json_text::append_string(out, id);
    respond(json_ok(out + "}"));
  }

  /// One cluster as the health cache sees it: what an operator polls to
  /// zero before shutting a deactivated cluster down.
  static void append_cluster(std::string& out, const active_config& active,
                             const cluster_state& c) {
    out += "{\"name\":";
    json_text::append_string(out, c.name);
    out += ",\"engine\":";
    json_text::append_string(out, c.engine_type);
    out += ",\"groups\":[";
    bool first = true;
    for (const auto& g : active.config->groups)
      if (std::find(g.members.begin(), g.members.end(), c.name) != g.members.end()) {
        if (!first)
          out += ',';
        first = false;
        json_text::append_string(out, g.name);
      }
    out += "],\"active\":";
    out += c.enabled.load() ? "true" : "false";
    out += ",\"status\":\"";
    out += to_string(c.status.load());
    out += "\",\"runningQueries\":" + std::to_string(c.running());
    out += ",\"queuedQueries\":" + std::to_string(c.queued());
    // What leastLoaded weighs beside our own: the cluster's own count at
    // its last check (Trino's includes its other clients).
    out += ",\"reportedLoad\":" + std::to_string(c.reported_load.load());
    // Of which the cluster queues (JDBC, JMX, METRICS, Trino's /v1/query):
    // what queryCountBased weighs after the user's own queued queries.
    out += ",\"reportedQueued\":" + std::to_string(c.queue_for("").queued);
    out += ",\"maxRunningQueries\":" + std::to_string(c.limit) + "}";
  }

  void list_clusters(http::respond_fn respond) {
    auto active = node_->snapshot->load();
    if (!active)
      return respond(http::error_response(503, "no active configuration"));
    std::string out = "[";
    for (const auto& [name, c] : active->clusters) {
      if (out.size() > 1)
        out += ',';
      append_cluster(out, *active, *c);
    }
    out += ']';
    respond(json_ok(std::move(out)));
  }

  void get_cluster(const std::string& name, http::respond_fn respond) {
    auto active = node_->snapshot->load();
    if (!active)
      return respond(http::error_response(503, "no active configuration"));
    auto i = active->clusters.find(name);
    if (i == active->clusters.end())
      return respond(http::error_response(404, "no cluster named " + name));
    std::string out;
    append_cluster(out, *active, *i->second);
    respond(json_ok(std::move(out)));
  }

  void change(fleet_request r, http::respond_fn respond) {
    change_fleet(node_, std::move(r), [respond](int status, std::string body) {
      if (status >= 300)
        return respond(http::error_response(status, body));
      auto res = json_ok(std::move(body));
      res.status = status;
      respond(std::move(res));
    });
  }

  /// /admin/config/clusters[/{name}], /admin/config/groups[/{name}] and
  /// /admin/config/routing: the fleet as stored, and changes to it.
  void config_api(const http::request& req, const std::vector<std::string>& seg,
                  http::respond_fn respond) {
    auto active = node_->snapshot->load();
    if (!active)
      return respond(http::error_response(503, "no active configuration"));
    const auto& m = req.method;
    if (seg.size() == 3 && seg[2] == "routing") {
      fleet_request r;
      r.what = fleet_request::op::put_routing;
      if (m == "GET")
        return respond(json_ok(config::routing_json(active->fleet)));
      if (m == "PUT")
        r.body = req.body;
      else if (m == "DELETE") // the routers go; the fallback stays
        r.body = "{\"routingFallback\":"
                 + nlohmann::json(active->fleet.routing_fallback).dump() + "}";
      else
        return respond(http::error_response(405, "GET, PUT or DELETE here"));
      return change(std::move(r), std::move(respond));
    }
    if (seg[2] != "clusters" && seg[2] != "groups")
      return respond(http::error_response(404, "no such resource: " + req.target));
    auto kind = seg[2] == "clusters" ? config::fleet_item::cluster : config::fleet_item::group;
    const auto& items = kind == config::fleet_item::cluster ? active->fleet.clusters
                                                            : active->fleet.groups;
    if (seg.size() == 3 && m == "GET") {
      std::string out = "[";
      for (const auto& [name, json] : items) {
        if (out.size() > 1)
          out += ',';
        out += config::shown_item(name, json);
      }
      return respond(json_ok(out + "]"));
    }
    fleet_request r;
    r.kind = kind;
    if (seg.size() == 3 && m == "POST") { // add: the name comes in the body
      auto name = nlohmann::json::parse(req.body, nullptr, false);
      if (!name.is_object() || !name.contains("name") || !name["name"].is_string())
        return respond(http::error_response(400, "the body must be a JSON object with a name"));
      r.what = fleet_request::op::add;
      r.name = name["name"].get<std::string>();
      r.body = req.body;
      return change(std::move(r), std::move(respond));
    }
    if (seg.size() != 4)
      return respond(http::error_response(404, "no such resource: " + req.target));
    r.name = seg[3];
    if (m == "GET") {
      auto json = config::find_item(active->fleet, kind, r.name);
      if (!json)
        return respond(http::error_response(404, "no " + seg[2].substr(0, seg[2].size() - 1)
                                                   + " named " + r.name));
      return respond(json_ok(config::shown_item(r.name, *json)));
    }
    if (m == "PUT") {
      r.what = fleet_request::op::put;
      r.body = req.body;
    } else if (m == "DELETE") {
      r.what = fleet_request::op::erase;
    } else {
      return respond(http::error_response(405, "GET, PUT or DELETE here"));
    }
    change(std::move(r), std::move(respond));
  }

  std::shared_ptr<node_services> node_;
  config::admin_api creds_;
  config::worker_api workers_;
  std::shared_ptr<studio_sessions> studio_;
  std::string role_;
};

} // namespace

namespace {

class waiting_routes : public http::handler {
public:
  explicit waiting_routes(std::string reason) : reason_(std::move(reason)) {
    // nop
  }

  void handle(http::request req, http::respond_fn respond) override {
    auto seg = http::path_segments(req.target);
    bool get = req.method == "GET";
    if (get && seg == std::vector<std::string>{"health"})
      return respond(json_ok("{\"status\":\"UP\"}"));
    // Trino Gateway's liveness probe: alive, only waiting (a probe that
    // failed here would have the pod killed). Its readiness: not yet.
    if (get && seg == std::vector<std::string>{"trino-gateway", "livez"})
      return respond(http::text_response(200, "ok"));
    if (get && seg == std::vector<std::string>{"trino-gateway", "readyz"})
      return respond(http::text_response(503, "QueryFlux is " + reason_));
    std::string body = "{\"status\":\"NOT_READY\",\"reason\":";
    json_text::append_string(body, reason_);
    auto res = json_ok(body + "}");
    res.status = 503;
    respond(std::move(res));
  }

private:
  std::string reason_;
};

} // namespace

std::shared_ptr<http::handler> make_waiting_routes(std::string reason) {
  return std::make_shared<waiting_routes>(std::move(reason));
}

std::shared_ptr<http::handler> make_admin_routes(std::shared_ptr<node_services> node,
                                                 config::admin_api credentials,
                                                 config::worker_api workers,
                                                 std::shared_ptr<studio_sessions> studio) {
  return std::make_shared<admin_routes>(std::move(node), std::move(credentials),
                                        std::move(workers), std::move(studio));
}

} // namespace qf::boundary
