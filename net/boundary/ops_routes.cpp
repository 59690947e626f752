// A worker's ops port: liveness, readiness, metrics, the worker's own status
// and, for peers starting without the control plane, its active config.
// There is no admin API on a worker.
#include "net/boundary/routes.hpp"
#include "net/boundary/trino_gateway_routes.hpp"

#include "net/boundary/ask.hpp"
#include "net/boundary/worker_routes.hpp"
#include "net/http/url.hpp"
#include "protocols/common/json_writer.hpp"

#include <caf/all.hpp>

namespace qf::boundary {

namespace {

using namespace std::chrono_literals;

http::response json_ok(std::string body) {
  http::response res;
  res.body = std::move(body);
  return res;
}

void append_time(std::string& out, int64_t ms) {
  if (ms <= 0)
    out += "null";
  else
    json_text::append_string(out, iso_time(ms));
}

class ops_routes : public http::handler {
public:
  ops_routes(std::shared_ptr<node_services> node, config::node settings)
    : node_(std::move(node)), settings_(std::move(settings)) {
    // nop
  }

  void handle(http::request req, http::respond_fn respond) override {
    auto seg = http::path_segments(req.target);
    bool get = req.method == "GET";
    if (get && seg == std::vector<std::string>{"health"})
      return respond(json_ok("{\"status\":\"UP\"}"));
    if (get && seg == std::vector<std::string>{"readyz"})
      return respond(readiness());
    if (get && seg == std::vector<std::string>{"metrics"})
      return respond(metrics_page(*node_, req));
    if (get && seg == std::vector<std::string>{"worker", "status"})
      return status(std::move(respond));
    if (get && seg == std::vector<std::string>{"worker", "peer-config"})
      return peer_config(req, std::move(respond));
    if (!seg.empty() && seg[0] == "admin")
      return respond(http::error_response(404, "a worker has no admin API: use the control "
                                               "plane's"));
    respond(http::error_response(404, "no such resource: " + req.target));
  }

private:
  http::response readiness() const {
    if (node_->ready())
      return json_ok("{\"status\":\"READY\"}");
    auto res = json_ok(node_->snapshot->load()
                         ? "{\"status\":\"NOT_READY\",\"reason\":\"clusters not checked yet\"}"
                         : "{\"status\":\"NOT_READY\",\"reason\":\"no configuration snapshot "
                           "yet\"}");
    res.status = 503;
    return res;
  }

  /// What /worker/status shows, gathered from the node's actors in turn.
  struct status_parts {
    holder_status held;
    link_status link;
    std::optional<capacity_status> leases;
    std::optional<reconcile_status> reconcile;
    uplink_status uplink;
  };

  void status(http::respond_fn respond) {
    auto node = node_;
    auto settings = settings_;
    auto parts = std::make_shared<status_parts>();
    auto fail = [respond](caf::error& err) {
      respond(http::error_response(504, caf::to_string(err)));
    };
    auto finish = [node, settings, respond, parts] {
      respond(json_ok(status_json(*node, settings, *parts)));
    };
    auto uplink = [node, parts, finish, fail] {
      ask(
        *node->sys, node->history_spool, 5s,
        [parts, finish](uplink_status& u) {
          parts->uplink = std::move(u);
          finish();
        },
        fail, atom::get::value);
    };
    auto reconcile = [node, parts, uplink, fail] {
      if (!node->reconciler)
        return uplink();
      ask(
        *node->sys, node->reconciler, 5s,
        [parts, uplink](reconcile_status& r) {
          parts->reconcile = std::move(r);
          uplink();
        },
        fail, atom::get::value);
    };
    auto leases = [node, parts, reconcile, fail] {
      if (!node->capacity)
        return reconcile();
      ask(
        *node->sys, node->capacity, 5s,
        [parts, reconcile](capacity_status& l) {
          parts->leases = std::move(l);
          reconcile();
        },
        fail, atom::get::value);
    };
    ask(
      *node->sys, node->snapshot_holder, 5s,
      [node, parts, leases, fail](holder_status& held) {
        parts->held = std::move(held);
        ask(
          *node->sys, node->control_plane, 5s,
          [parts, leases](link_status& link) {
            parts->link = std::move(link);
            leases();
          },
          fail, atom::get::value);
      },
      fail, atom::get::value);
  }

  static std::string status_json(const node_services& node, const config::node& settings,
                                 const status_parts& parts) {
    const auto& held = parts.held;
    const auto& link = parts.link;
    const auto& leases = parts.leases;
    std::string out = "{\"workerName\":";
    json_text::append_string(out, node.worker_name);
    out += ",\"labels\":";
    append_labels(out, node.worker_labels);
    out += ",\"version\":\"" QF_VERSION "\",\"ready\":";
    out += node.ready() ? "true" : "false";
    out += ",\"downloadedRevision\":";
    append_string_or_null(out, link.downloaded_revision);
    out += ",\"activeRevision\":";
    append_string_or_null(out, held.revision);
    out += ",\"configSource\":";
    append_string_or_null(out, held.source == config_source::none ? std::string{}
                                                            : std::string{to_string(held.source)});
    out += ",\"stale\":";
    out += held.stale ? "true" : "false";
    out += ",\"confirmedAt\":";
    append_time(out, held.confirmed_at_ms);
    out += ",\"lastSync\":";
    append_time(out, link.last_sync_ms);
    out += ",\"lastError\":";
    append_string_or_null(out, link.last_error);
    out += ",\"consecutiveFailures\":" + std::to_string(link.consecutive_failures);
    out += ",\"controlPlane\":";
    json_text::append_string(out, link.control_plane_url);
    if (const auto& pb = settings.control_plane.peer_bootstrap) {
      out += ",\"peerBootstrap\":{\"address\":";
      json_text::append_string(out, pb->address);
      out += ",\"lastError\":";
      append_string_or_null(out, link.peer_error);
      out += '}';
    }
    out += ",\"coordination\":{\"mode\":";
    json_text::append_string(out, std::string{config::to_string(settings.coordination.mode)});
    out += ",\"onUnavailable\":";
    out += settings.coordination.on_unavailable == config::unavailable_policy::local_limits
             ? "\"localLimits\""
             : "\"failClosed\"";
    // Shared capacity: connected, degraded (own limits) or closed (no new
    // query), and the slots held per cluster.
    if (leases) {
      out += ",\"state\":";
      json_text::append_string(out, leases->state);
      out += ",\"leases\":";
      append_counts(out, leases->held);
      out += ",\"calls\":" + std::to_string(leases->calls)
             + ",\"failures\":" + std::to_string(leases->failures) + ",\"lastError\":";
      append_string_or_null(out, leases->last_error);
    }
    // Who asks the engines for their running counts (one node of the
    // fleet, the engine-reconcile lock's holder).
    if (const auto& r = parts.reconcile) {
      out += ",\"engineReconcile\":{\"counting\":";
      out += r->counting ? "true" : "false";
      out += ",\"holdsLock\":";
      out += r->holds_lock ? "true" : "false";
      out += ",\"lockHolder\":";
      append_string_or_null(out, r->lock_holder);
      out += ",\"failures\":" + std::to_string(r->failures) + ",\"lastError\":";
      append_string_or_null(out, r->last_error);
      out += '}';
    }
    // The history policy in effect: the snapshot's, with this worker's own
    // endpoint over it.
    auto active = node.snapshot->load();
    std::optional<std::string> endpoint = settings.history.endpoint;
    auto redaction = config::redaction::full;
    if (active) {
      const auto& api = active->config->queryflux.worker_api;
      if (!endpoint)
        endpoint = api.history_endpoint;
      redaction = api.history_redaction;
    }
    out += "},\"history\":{\"endpoint\":";
    append_string_or_null(out, endpoint.value_or(""));
    out += ",\"redaction\":";
    json_text::append_string(out, std::string{config::to_string(redaction)});
    out += ",\"spoolMaxRecords\":" + std::to_string(settings.history.spool_max_records);
    const auto& u = parts.uplink;
    out += "},\"historyUplink\":{\"queued\":" + std::to_string(u.queued)
           + ",\"sent\":" + std::to_string(u.sent) + ",\"dropped\":" + std::to_string(u.dropped)
           + ",\"duplicates\":" + std::to_string(u.duplicates) + ",\"destination\":";
    append_string_or_null(out, u.destination);
    out += ",\"lastError\":";
    append_string_or_null(out, u.last_error);
    out += "}}";
    return out;
  }

  void peer_config(const http::request& req, http::respond_fn respond) {
    if (!settings_.control_plane.peer_bootstrap)
      return respond(http::error_response(404, "peer copies are served with "
                                               "controlPlane.peerBootstrap set"));
    if (!has_worker_secret(req, settings_.control_plane.shared_secret))
      return respond(bearer_required("peers present the fleet's shared secret"));
    ask(
      *node_->sys, node_->snapshot_holder, 5s,
      [respond](holder_status& held) {
        if (!held.encoded)
          return respond(retry_later(503, "no config to share yet"));
        http::response res;
        // A copy of a copy keeps the control plane's time: never fresher.
        res.body = worker_api::peer_body(*held.encoded, held.confirmed_at_ms);
        res.headers.emplace_back("Cache-Control", "no-store");
        respond(std::move(res));
      },
      [respond](caf::error& err) { respond(http::error_response(504, caf::to_string(err))); },
      atom::get::value);
  }

  std::shared_ptr<node_services> node_;
  config::node settings_;
};

} // namespace

std::shared_ptr<http::handler> make_ops_routes(std::shared_ptr<node_services> node,
                                               config::node settings) {
  return std::make_shared<ops_routes>(std::move(node), std::move(settings));
}

} // namespace qf::boundary
