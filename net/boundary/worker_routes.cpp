#include "net/boundary/worker_routes.hpp"

#include "net/boundary/ask.hpp"
#include "net/boundary/capacity_routes.hpp"
#include "net/http/url.hpp"
#include "protocols/common/json_writer.hpp"
#include "protocols/common/temporal.hpp"
#include "protocols/common/secrets.hpp"

#include <caf/all.hpp>

#include <charconv>

namespace qf::boundary {

namespace {

using namespace std::chrono_literals;

/// How long a worker may ask the control plane to hold a long poll.
constexpr int64_t max_hold_secs = 300;

http::response snapshot_response(const served_snapshot& s) {
  http::response res;
  res.shared_body = s.body;
  res.headers.emplace_back("ETag", "\"" + s.revision + "\"");
  res.headers.emplace_back("Cache-Control", "no-store"); // it carries credentials
  return res;
}

http::response unavailable(const caf::error& err) {
  return retry_later(code_of(err) == errc::not_configured ? 503 : 504,
                     code_of(err) ? message_of(err) : caf::to_string(err));
}

void get_config(const std::shared_ptr<node_services>& node, http::respond_fn respond) {
  ask(
    *node->sys, node->config_store, 5s,
    [respond](served_snapshot& s) { respond(snapshot_response(s)); },
    [respond](caf::error& err) { respond(unavailable(err)); }, atom::get::value);
}

void wait_for_config(const std::shared_ptr<node_services>& node, const http::request& req,
                     http::respond_fn respond) {
  auto params = http::query_params(req.target);
  auto since = params["since"];
  if (!since.empty() && !worker_api::is_revision(since))
    return respond(http::error_response(400, "since: expected a revision, sha256:<64 hex "
                                             "digits>, as /worker/config answers"));
  int64_t hold = 30;
  if (auto t = params.find("timeoutSecs"); t != params.end()) {
    auto [end, ec] = std::from_chars(t->second.data(), t->second.data() + t->second.size(), hold);
    if (ec != std::errc{} || end != t->second.data() + t->second.size() || hold < 1
        || hold > max_hold_secs)
      return respond(http::error_response(400, "timeoutSecs: expected 1 to 300"));
  }
  auto held = std::chrono::seconds(hold);
  ask(
    *node->sys, node->config_store, held * 17 / 16 + 5s,
    [respond](snapshot_wait_result& r) {
      if (r.snapshot)
        return respond(snapshot_response(*r.snapshot));
      http::response res;
      res.status = 304;
      respond(std::move(res));
    },
    [respond](caf::error& err) { respond(unavailable(err)); }, atom::wait::value, since,
    caf::timespan{held});
}

template <class Atom>
void report(const std::shared_ptr<node_services>& node, const http::request& req, Atom verb,
            http::respond_fn respond) {
  if (req.body.size() > worker_api::max_report_bytes)
    return respond(http::error_response(413, "the report is larger than 64 KiB"));
  auto decoded = worker_api::decode_report(req.body);
  if (!decoded.report)
    return respond(http::error_response(400, decoded.error));
  ask(
    *node->sys, node->worker_registry, 5s,
    [respond](atom::ok) {
      http::response res;
      res.body = "{\"accepted\":true}";
      respond(std::move(res));
    },
    [respond](caf::error& err) { respond(unavailable(err)); }, verb, std::move(*decoded.report));
}

using lease_map = std::map<std::string, std::map<std::string, uint32_t>>;

void append_worker(std::string& out, const worker_entry& e, const std::string& current,
                   const lease_map& leases) {
  const auto& r = e.report;
  auto optional = [&](const std::string& s) { append_string_or_null(out, s); };
  out += "{\"name\":";
  json_text::append_string(out, r.name);
  out += ",\"labels\":";
  append_labels(out, r.labels);
  out += ",\"version\":";
  json_text::append_string(out, r.version);
  out += ",\"status\":";
  json_text::append_string(out, e.status);
  out += ",\"activeRevision\":";
  optional(r.active_revision);
  out += ",\"downloadedRevision\":";
  optional(r.downloaded_revision);
  out += ",\"currentRevision\":";
  optional(current);
  out += ",\"upToDate\":";
  out += !current.empty() && r.active_revision == current ? "true" : "false";
  out += ",\"lastError\":";
  optional(r.last_error);
  out += ",\"coordinationMode\":";
  json_text::append_string(out, r.coordination_mode);
  out += ",\"coordinationWarning\":";
  optional(e.coordination_warning);
  out += ",\"configSource\":";
  optional(r.config_source);
  out += ",\"registeredAt\":";
  json_text::append_string(out, iso_time(e.registered_at_ms));
  out += ",\"lastSeenAt\":";
  json_text::append_string(out, iso_time(e.last_seen_at_ms));
  // Known from heartbeats this replica heard (not stored in the table).
  out += ",\"heartbeatIntervalSecs\":"
         + (r.heartbeat_interval_secs > 0 ? std::to_string(r.heartbeat_interval_secs) : "null");
  // The slots it holds per cluster (shared capacity), null without a session.
  out += ",\"leases\":";
  if (auto l = leases.find(r.name); l != leases.end())
    append_counts(out, l->second);
  else
    out += "null";
  out += '}';
}

} // namespace

http::response bearer_required(std::string_view message) {
  auto res = http::error_response(401, message);
  res.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"queryflux-workers\"");
  return res;
}

http::response coded(int status, std::string_view code, std::string_view message) {
  auto res = http::error_response(status, message);
  res.body.pop_back(); // the closing brace
  res.body += ",\"code\":\"";
  res.body += code;
  res.body += "\"}";
  return res;
}

http::response retry_later(int status, std::string_view message) {
  auto res = http::error_response(status, message);
  res.headers.emplace_back("Retry-After", "1");
  return res;
}

void append_string_or_null(std::string& out, const std::string& s) {
  if (s.empty())
    out += "null";
  else
    json_text::append_string(out, s);
}

void append_labels(std::string& out, const std::map<std::string, std::string>& labels) {
  out += '{';
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first)
      out += ',';
    first = false;
    json_text::append_string(out, k);
    out += ':';
    json_text::append_string(out, v);
  }
  out += '}';
}

void append_counts(std::string& out, const std::map<std::string, uint32_t>& counts) {
  out += '{';
  bool first = true;
  for (const auto& [key, n] : counts) {
    if (!std::exchange(first, false))
      out += ',';
    json_text::append_string(out, key);
    out += ':' + std::to_string(n);
  }
  out += '}';
}

std::string iso_time(int64_t ms) {
  return utc_text(ms, utc_style::iso);
}

bool has_worker_secret(const http::request& req, const std::string& secret) {
  auto auth = req.header("authorization");
  if (auth.rfind("Bearer ", 0) != 0 || secret.empty())
    return false;
  return secrets_equal(std::string_view{auth}.substr(7), secret);
}

void serve_worker_api(const std::shared_ptr<node_services>& node, const config::worker_api& api,
                      const http::request& req, const std::vector<std::string>& seg,
                      http::respond_fn respond) {
  if (!api.enabled || !node->config_store)
    return respond(http::error_response(404, "this node serves no workers (workerApi.enabled)"));
  if (!has_worker_secret(req, api.shared_secret)) // the admin credentials too
    return respond(bearer_required("the worker API takes workerApi.sharedSecret as a bearer "
                                   "token"));
  const auto& m = req.method;
  auto path = seg.size() >= 2 ? seg[1] : std::string{};
  if (seg.size() == 2 && path == "config" && m == "GET")
    return get_config(node, std::move(respond));
  if (seg.size() == 3 && path == "config" && seg[2] == "wait" && m == "GET")
    return wait_for_config(node, req, std::move(respond));
  if (seg.size() == 2 && path == "register" && m == "POST")
    return report(node, req, atom::enroll::value, std::move(respond));
  if (seg.size() == 2 && path == "heartbeat" && m == "POST")
    return report(node, req, atom::heartbeat::value, std::move(respond));
  if (path == "capacity")
    return serve_capacity(node, req, seg, std::move(respond));
  if (path == "sweep-lock")
    return serve_sweep_lock(node, req, seg, std::move(respond));
  if (seg.size() == 2 && path == "query-records" && m == "POST")
    return ingest_query_records(node, req, std::move(respond));
  bool known = (seg.size() == 2
                && (path == "config" || path == "register" || path == "heartbeat"
                    || path == "query-records"))
               || (seg.size() == 3 && path == "config" && seg[2] == "wait");
  if (known)
    return respond(http::error_response(405, "method not allowed here"));
  respond(http::error_response(404, "no such worker API resource: " + req.target));
}

void serve_admin_workers(const std::shared_ptr<node_services>& node, const http::request& req,
                         const std::vector<std::string>& seg, http::respond_fn respond) {
  if (req.method != "GET")
    return respond(http::error_response(405, "use GET"));
  if (!node->worker_registry)
    return respond(http::error_response(404, "this node serves no workers (workerApi.enabled)"));
  auto sys = node->sys;
  auto registry = node->worker_registry;
  // The current revision, to tell the workers that run it from the others,
  // and who holds which leases.
  auto with_current = [sys, store = node->config_store, table = node->lease_table](
                        std::function<void(std::string, lease_map)> then) {
    ask(
      *sys, store, 5s,
      [sys, table, then](served_snapshot& s) {
        ask(
          *sys, table, 5s,
          [then, revision = s.revision](std::vector<lease_holder_view>& holders) {
            lease_map leases;
            for (auto& h : holders)
              leases[h.worker] = std::move(h.held);
            then(revision, std::move(leases));
          },
          [then, revision = s.revision](caf::error&) { then(revision, {}); }, atom::get::value);
      },
      [then](caf::error&) { then("", {}); }, atom::get::value);
  };
  if (seg.size() == 2) {
    return with_current([sys, registry, respond](std::string current, lease_map leases) {
      ask(
        *sys, registry, 5s,
        [respond, current, leases](std::vector<worker_entry>& all) {
          http::response res;
          res.body = "[";
          for (const auto& e : all) {
            if (res.body.size() > 1)
              res.body += ',';
            append_worker(res.body, e, current, leases);
          }
          res.body += ']';
          respond(std::move(res));
        },
        [respond](caf::error& err) { respond(unavailable(err)); }, atom::get::value);
    });
  }
  if (seg.size() != 3)
    return respond(http::error_response(404, "no such resource: " + req.target));
  with_current([sys, registry, respond, name = seg[2]](std::string current, lease_map leases) {
    ask(
      *sys, registry, 5s,
      [respond, current, leases](worker_entry& e) {
        http::response res;
        append_worker(res.body, e, current, leases);
        respond(std::move(res));
      },
      [respond](caf::error& err) {
        if (code_of(err) == errc::unknown_worker)
          return respond(http::error_response(404, message_of(err)));
        respond(unavailable(err));
      },
      atom::get::value, name);
  });
}

} // namespace qf::boundary
