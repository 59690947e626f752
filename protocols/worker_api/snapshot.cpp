#include "protocols/worker_api/snapshot.hpp"

#include "protocols/common/canonical_json.hpp"
#include "protocols/common/json_depth.hpp"
#include "protocols/common/sha256.hpp"

#include <nlohmann/json.hpp>

namespace qf::worker_api {

namespace {

using nlohmann::json;

std::string ms_text(config::duration d) {
  return std::to_string(d.count()) + "ms";
}

json optional_string(const std::optional<std::string>& s) {
  return s ? json(*s) : json(nullptr);
}

std::string revision_of(std::string_view canonical_payload) {
  return "sha256:" + sha256_hex(canonical_payload);
}

/// The snapshot's sections back into a fleet and policy; "" or an error.
std::string read_content(const json& s, snapshot_content& out) {
  auto objects_of = [](const json& j) {
    if (!j.is_object())
      return false;
    for (const auto& [name, item] : j.items())
      if (name.empty() || !item.is_object())
        return false;
    return true;
  };
  if (!s.contains("clusters") || !objects_of(s["clusters"]))
    return "snapshot.clusters must map each name to an object";
  if (!s.contains("clusterGroups") || !objects_of(s["clusterGroups"]))
    return "snapshot.clusterGroups must map each name to an object";
  if (!s.contains("routers") || !s["routers"].is_array())
    return "snapshot.routers must be a list";
  for (const auto& [name, item] : s["clusters"].items())
    out.fleet.clusters.emplace_back(name, item.dump());
  for (const auto& [name, item] : s["clusterGroups"].items())
    out.fleet.groups.emplace_back(name, item.dump());
  for (const auto& r : s["routers"]) {
    if (!r.is_object())
      return "snapshot.routers must hold objects";
    out.fleet.routers.push_back(r.dump());
  }
  auto fallback = s.value("routingFallback", json(nullptr));
  if (fallback.is_string())
    out.fleet.routing_fallback = fallback.get<std::string>();
  else if (!fallback.is_null())
    return "snapshot.routingFallback must be a group name or null";
  auto& p = out.policy;
  for (auto [key, dest] : {std::pair{"auth", &p.auth_json}, std::pair{"monitor", &p.monitor_json}}) {
    auto section = s.value(key, json(nullptr));
    if (section.is_object())
      *dest = section.dump();
    else if (!section.is_null())
      return std::string{"snapshot."} + key + " must be an object";
  }
  auto history = s.value("history", json::object());
  if (!history.is_object())
    return "snapshot.history must be an object";
  auto endpoint = history.value("endpoint", json(nullptr));
  if (endpoint.is_string())
    p.history_endpoint = endpoint.get<std::string>();
  else if (!endpoint.is_null())
    return "snapshot.history.endpoint must be a URL or null";
  auto redaction = history.value("redaction", json("full"));
  auto r = redaction.is_string() ? config::redaction_from_string(redaction.get<std::string>())
                                 : std::nullopt;
  if (!r)
    return "snapshot.history.redaction must be full, maskLiterals or metadata";
  p.redaction = *r;
  auto translation = s.value("translation", json::object());
  if (!translation.is_object())
    return "snapshot.translation must be an object";
  auto mode = translation.value("mode", json(nullptr));
  if (mode.is_string())
    p.translation_mode = mode.get<std::string>();
  else if (!mode.is_null())
    return "snapshot.translation.mode must be a string or null";
  auto strict = translation.value("errorOnUnsupported", json(false));
  if (!strict.is_boolean())
    return "snapshot.translation.errorOnUnsupported must be true or false";
  p.error_on_unsupported = strict.get<bool>();
  return "";
}

} // namespace

bool is_revision(std::string_view r) {
  if (r.size() != 7 + 64 || r.substr(0, 7) != "sha256:")
    return false;
  for (char c : r.substr(7))
    if (!std::isdigit(static_cast<unsigned char>(c)) && (c < 'a' || c > 'f'))
      return false;
  return true;
}

namespace {

/// The monitor section as workers read it. The probe's keys only where
/// they differ from the defaults: a fleet that sets none has the revision
/// it had before probes existed, and older workers read it.
json monitor_json(const config::monitor& m) {
  json out{{"taskDelay", ms_text(m.task_delay)}, {"checkTimeout", ms_text(m.check_timeout)}};
  const config::health_probe defaults;
  const auto& p = m.probe;
  if (p.type != defaults.type)
    out["type"] = to_string(p.type);
  if (p.retries != defaults.retries)
    out["retries"] = p.retries;
  if (p.metrics_endpoint != defaults.metrics_endpoint)
    out["metricsEndpoint"] = p.metrics_endpoint;
  if (p.metric_minimum_values != defaults.metric_minimum_values)
    out["metricMinimumValues"] = p.metric_minimum_values;
  if (p.metric_maximum_values != defaults.metric_maximum_values)
    out["metricMaximumValues"] = p.metric_maximum_values;
  if (p.running_queries_metric_name != defaults.running_queries_metric_name)
    out["runningQueriesMetricName"] = p.running_queries_metric_name;
  if (p.queued_queries_metric_name != defaults.queued_queries_metric_name)
    out["queuedQueriesMetricName"] = p.queued_queries_metric_name;
  return out;
}

} // namespace

snapshot_policy policy_of(const config::gateway_config& cfg) {
  snapshot_policy p;
  json auth = {{"provider", cfg.auth.enabled ? "static" : "none"},
               {"allowCleartextWithoutTls", cfg.auth.allow_cleartext_without_tls}};
  if (cfg.auth.enabled) {
    json users = json::object();
    for (const auto& [name, password] : cfg.auth.users)
      users[name] = {{"password", password}};
    auth["staticUsers"] = {{"users", users}};
  }
  p.auth_json = auth.dump();
  p.monitor_json = monitor_json(cfg.health).dump();
  const auto& api = cfg.queryflux.worker_api;
  p.history_endpoint = api.history_endpoint;
  p.redaction = api.history_redaction;
  p.translation_mode = cfg.translation.mode;
  p.error_on_unsupported = cfg.translation.error_on_unsupported;
  return p;
}

std::optional<encoded_snapshot> encode(const snapshot_content& c, std::string& error) {
  auto parse = [&](const std::string& what, const std::string& text) {
    auto j = json::parse(text, nullptr, false);
    if (j.is_discarded())
      error = what + " is not JSON";
    return j;
  };
  json s = {{"schemaVersion", snapshot_schema_version}};
  s["clusters"] = json::object();
  for (const auto& [name, text] : c.fleet.clusters)
    s["clusters"][name] = parse("cluster " + name, text);
  s["clusterGroups"] = json::object();
  for (const auto& [name, text] : c.fleet.groups)
    s["clusterGroups"][name] = parse("cluster group " + name, text);
  s["routers"] = json::array();
  for (size_t i = 0; i < c.fleet.routers.size(); ++i)
    s["routers"].push_back(parse("router " + std::to_string(i), c.fleet.routers[i]));
  s["routingFallback"] = c.fleet.routing_fallback.empty() ? json(nullptr)
                                                          : json(c.fleet.routing_fallback);
  const auto& p = c.policy;
  s["auth"] = p.auth_json.empty() ? json(nullptr) : parse("auth", p.auth_json);
  s["monitor"] = p.monitor_json.empty() ? json(nullptr) : parse("monitor", p.monitor_json);
  s["history"] = {{"endpoint", optional_string(p.history_endpoint)},
                  {"redaction", config::to_string(p.redaction)}};
  s["translation"] = {{"mode", optional_string(p.translation_mode)},
                      {"errorOnUnsupported", p.error_on_unsupported}};
  if (!error.empty())
    return std::nullopt;
  auto payload = json_text::canonical(s);
  if (!payload) {
    error = "the configuration holds text that is not UTF-8";
    return std::nullopt;
  }
  return encoded_snapshot{revision_of(*payload), std::move(*payload)};
}

std::string config_body(const encoded_snapshot& s) {
  return "{\"revision\":\"" + s.revision + "\",\"snapshot\":" + s.payload + "}";
}

std::string peer_body(const encoded_snapshot& s, int64_t confirmed_at_ms) {
  return "{\"confirmedAt\":" + std::to_string(confirmed_at_ms) + ",\"revision\":\"" + s.revision
         + "\",\"snapshot\":" + s.payload + "}";
}

decode_outcome decode(std::string_view body) {
  decode_outcome out;
  auto fail = [&](std::string why) {
    out.error = std::move(why);
    return out;
  };
  if (body.size() > max_snapshot_bytes)
    return fail("the snapshot is larger than " + std::to_string(max_snapshot_bytes) + " bytes");
  if (!json_text::nests_within(body, max_json_depth))
    return fail("the snapshot nests deeper than " + std::to_string(max_json_depth) + " levels");
  auto doc = json::parse(body, nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    return fail("the snapshot is not a JSON object (truncated?)");
  auto revision = doc.value("revision", json(nullptr));
  if (!revision.is_string() || !is_revision(revision.get<std::string>()))
    return fail("the snapshot has no revision (sha256:<64 hex digits>)");
  out.claimed_revision = revision.get<std::string>();
  auto it = doc.find("snapshot");
  if (it == doc.end() || !it->is_object())
    return fail("the snapshot has no snapshot object");
  auto version = it->value("schemaVersion", json(nullptr));
  if (!version.is_number_integer())
    return fail("the snapshot has no schemaVersion");
  if (version.get<int64_t>() != snapshot_schema_version)
    return fail("unknown snapshot schemaVersion " + std::to_string(version.get<int64_t>())
                + " (this worker reads " + std::to_string(snapshot_schema_version)
                + "): upgrade the worker");
  auto payload = json_text::canonical(*it);
  if (!payload)
    return fail("the snapshot holds text that is not UTF-8");
  auto computed = revision_of(*payload);
  if (computed != revision.get<std::string>())
    return fail("the snapshot's revision " + revision.get<std::string>()
                + " is not the hash of its content (" + computed + ")");
  received_snapshot r;
  r.encoded = {std::move(computed), std::move(*payload)};
  if (auto problem = read_content(*it, r.content); !problem.empty())
    return fail(problem);
  if (auto c = doc.find("confirmedAt"); c != doc.end()) {
    if (!c->is_number_integer() || c->get<int64_t>() < 0)
      return fail("confirmedAt must be milliseconds since the epoch");
    r.confirmed_at_ms = c->get<int64_t>();
  }
  out.snapshot = std::move(r);
  return out;
}

} // namespace qf::worker_api
