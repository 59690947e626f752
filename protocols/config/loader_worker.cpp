// Worker mode in the config: the control plane's workerApi, a worker's way
// to its control plane, and what a worker config may not hold.
#include "protocols/config/loader_sections.hpp"

#include "protocols/common/host_port.hpp"
#include "protocols/worker_api/worker_report.hpp"

namespace qf::config::detail {

namespace {

bool is_http_url(std::string_view url) {
  return url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0;
}

/// An optional URL that `null` leaves unset (history endpoints).
void read_optional_url(walker& w, const YAML::Node& parent, const std::string& path,
                       std::string_view key, std::optional<std::string>& out) {
  auto n = parent[std::string{key}];
  if (!n || n.IsNull())
    return;
  std::string url;
  w.read(parent, path, key, url);
  if (!is_http_url(url))
    w.report(walker::join(path, key), "expected an http:// or https:// URL, or null");
  else
    out = url;
}

void read_seconds_between(walker& w, const YAML::Node& parent, const std::string& path,
                          std::string_view key, std::chrono::seconds& out, uint32_t least,
                          uint32_t most) {
  uint32_t secs = 0;
  if (!w.read_uint(parent, path, key, secs, most))
    return;
  if (secs < least)
    w.report(walker::join(path, key), "must be at least " + std::to_string(least));
  else
    out = std::chrono::seconds(secs);
}

void read_peer_bootstrap(walker& w, const YAML::Node& n, const std::string& path,
                         peer_bootstrap& out) {
  if (!w.expect_map(n, path))
    return;
  w.check_keys(n, path, {"address", "afterSecs", "maxAgeSecs"});
  w.read(n, path, "address", out.address);
  if (out.address.empty())
    w.report(path + ".address", "missing: host:port of the workers' ops port");
  else if (!split_host_port(out.address, std::nullopt))
    w.report(path + ".address", "expected host:port (an IPv6 address in brackets)");
  read_seconds_between(w, n, path, "afterSecs", out.after, 0, 86'400);
  read_seconds_between(w, n, path, "maxAgeSecs", out.max_age, 1, 365u * 86'400);
}

void read_control_plane(walker& w, const YAML::Node& n, const std::string& path,
                        control_plane_link& out) {
  if (!w.expect_map(n, path))
    return;
  w.check_keys(n, path,
               {"url", "auth", "pollTimeoutSecs", "heartbeatIntervalSecs", "allowInsecureHttp",
                "peerBootstrap", "tls"});
  w.read(n, path, "url", out.url);
  w.read(n, path, "allowInsecureHttp", out.allow_insecure_http);
  while (!out.url.empty() && out.url.back() == '/')
    out.url.pop_back();
  if (out.url.empty())
    w.report(path + ".url", "missing: the control plane's admin port, https://host:9000");
  else if (!is_http_url(out.url))
    w.report(path + ".url", "expected an https:// URL");
  else if (out.url.rfind("http://", 0) == 0 && !out.allow_insecure_http)
    w.report(path + ".url", "http:// would carry the snapshot's cluster credentials in clear: "
                            "use https://, or set " + path
                              + ".allowInsecureHttp: true (local demos only)");
  auto a = n["auth"];
  if (!a || a.IsNull()) {
    w.report(path + ".auth", "missing: {mode: sharedSecret, sharedSecret: ...}");
  } else if (w.expect_map(a, path + ".auth")) {
    auto ap = path + ".auth";
    w.check_keys(a, ap, {"mode", "sharedSecret"});
    std::string mode;
    w.read(a, ap, "mode", mode);
    if (mode != "sharedSecret")
      w.report(ap + ".mode", "expected sharedSecret");
    w.read(a, ap, "sharedSecret", out.shared_secret);
    if (out.shared_secret.empty())
      w.report(ap + ".sharedSecret", "missing: the control plane's workerApi.sharedSecret");
  }
  // A control plane holds a long poll for at most 300 s.
  read_seconds_between(w, n, path, "pollTimeoutSecs", out.poll_timeout, 1, 300);
  read_seconds_between(w, n, path, "heartbeatIntervalSecs", out.heartbeat_interval, 1, 3600);
  if (auto t = n["tls"]; t && !t.IsNull() && w.expect_map(t, path + ".tls")) {
    w.check_keys(t, path + ".tls", {"caFile"});
    w.read(t, path + ".tls", "caFile", out.tls_ca_file);
  }
  if (auto p = n["peerBootstrap"]; p && !p.IsNull()) {
    out.peer_bootstrap.emplace();
    read_peer_bootstrap(w, p, path + ".peerBootstrap", *out.peer_bootstrap);
  }
}

void read_coordination(walker& w, const YAML::Node& n, const std::string& path,
                       coordination& out) {
  if (!w.expect_map(n, path))
    return;
  w.check_keys(n, path, {"mode", "onUnavailable"});
  std::string mode = "controlPlane";
  w.read(n, path, "mode", mode);
  if (mode == "controlPlane")
    out.mode = coordination_mode::control_plane;
  else if (mode == "local")
    out.mode = coordination_mode::local;
  else
    w.report(path + ".mode", "expected controlPlane or local");
  std::string policy = "failClosed";
  w.read(n, path, "onUnavailable", policy);
  if (policy == "failClosed")
    out.on_unavailable = unavailable_policy::fail_closed;
  else if (policy == "localLimits")
    out.on_unavailable = unavailable_policy::local_limits;
  else
    w.report(path + ".onUnavailable", "expected failClosed or localLimits");
}

void read_worker_history(walker& w, const YAML::Node& n, const std::string& path,
                         worker_history& out) {
  if (!w.expect_map(n, path))
    return;
  w.check_keys(n, path, {"endpoint", "spoolMaxRecords"});
  read_optional_url(w, n, path, "endpoint", out.endpoint);
  if (w.read_uint(n, path, "spoolMaxRecords", out.spool_max_records, 10'000'000)
      && out.spool_max_records == 0)
    w.report(path + ".spoolMaxRecords", "must be at least 1");
}

/// The keys of queryflux.* that only a worker reads.
constexpr std::string_view worker_only_keys[] = {
  "workerName", "workerLabels", "workerLabelsFile", "controlPlane", "coordination", "history"};

} // namespace

void read_worker_api(walker& w, const YAML::Node& n, const std::string& path, worker_api& out) {
  if (!w.expect_map(n, path))
    return;
  w.check_keys(n, path, {"enabled", "sharedSecret", "history", "advertiseUrl"});
  w.read(n, path, "enabled", out.enabled);
  w.read(n, path, "sharedSecret", out.shared_secret);
  read_optional_url(w, n, path, "advertiseUrl", out.advertise_url);
  if (auto h = n["history"]; h && !h.IsNull() && w.expect_map(h, path + ".history")) {
    auto hp = path + ".history";
    w.check_keys(h, hp, {"endpoint", "redaction"});
    read_optional_url(w, h, hp, "endpoint", out.history_endpoint);
    std::string name = "full";
    w.read(h, hp, "redaction", name);
    if (auto r = redaction_from_string(name))
      out.history_redaction = *r;
    else
      w.report(hp + ".redaction", "expected full, maskLiterals or metadata");
  }
  if (out.enabled && out.shared_secret.size() < 16)
    w.report(path + ".sharedSecret", out.shared_secret.empty()
                                       ? "missing: workers authenticate with it"
                                       : "too short: use 16 characters or more, random");
}

void read_worker_settings(walker& w, const YAML::Node& n, node& out) {
  const std::string path = "queryflux";
  if (out.role != node_role::worker) {
    for (auto key : worker_only_keys)
      if (n[std::string{key}])
        w.report(walker::join(path, key), "only a worker (role: worker) reads this");
    return;
  }
  w.read(n, path, "workerName", out.worker_name);
  if (!out.worker_name.empty() && !qf::worker_api::valid_worker_name(out.worker_name))
    w.report(path + ".workerName", "expected 1 to 253 letters, digits, '-', '_' or '.'");
  w.read_string_map(n, path, "workerLabels", out.worker_labels);
  w.read(n, path, "workerLabelsFile", out.worker_labels_file);
  if (auto c = n["controlPlane"]; c && !c.IsNull())
    read_control_plane(w, c, path + ".controlPlane", out.control_plane);
  else
    w.report(path + ".controlPlane", "missing: a worker pulls its config from a control plane");
  if (auto c = n["coordination"]; c && !c.IsNull())
    read_coordination(w, c, path + ".coordination", out.coordination);
  if (auto h = n["history"]; h && !h.IsNull())
    read_worker_history(w, h, path + ".history", out.history);
  if (auto a = n["adminApi"]; a && a.IsMap())
    for (auto key : {"username", "password"})
      if (a[key])
        w.report(path + ".adminApi." + key,
                 "a worker has no admin API: its adminApi.port serves /health, /readyz, "
                 "/metrics and /worker/status");
  if (out.persistence.type != "inMemory")
    w.report(path + ".persistence.type", "owned by the control plane: a worker never connects "
                                         "to a database (only inMemory)");
  if (n["workerApi"])
    w.report(path + ".workerApi", "owned by the control plane: workers do not serve workers");
}

void read_translation(walker& w, const YAML::Node& n, translation& out) {
  const std::string path = "translation";
  if (!w.expect_map(n, path))
    return;
  w.check_keys(n, path, {"mode", "errorOnUnsupported", "pythonScripts",
                         "schemaResolutionTimeoutMs"});
  if (auto m = n["mode"]; m && !m.IsNull()) {
    std::string mode;
    w.read(n, path, "mode", mode);
    out.mode = mode;
  }
  w.read(n, path, "errorOnUnsupported", out.error_on_unsupported);
  w.read_string_list(n, path, "pythonScripts", out.python_scripts);
  uint32_t ms = 0;
  if (w.read_uint(n, path, "schemaResolutionTimeoutMs", ms, 600'000))
    out.schema_resolution_timeout = std::chrono::milliseconds(ms);
}

std::vector<std::string_view> report_owned_by_control_plane(walker& w, const YAML::Node& root,
                                                            bool fleet_from_snapshot) {
  // Top-level sections a worker receives in its snapshot (or that only a
  // control plane runs): listed all at once, so one validate run shows them.
  static constexpr std::string_view fleet_keys[] = {"clusters", "clusterGroups", "routers",
                                                    "routingFallback", "auth"};
  static constexpr std::string_view other_keys[] = {"authorization", "catalogProvider",
                                                    "guardrails", "accessControl",
                                                    "databaseCache"};
  std::vector<std::string_view> owned;
  if (!root.IsMap())
    return owned;
  for (auto key : fleet_keys)
    if (root[std::string{key}]) {
      owned.push_back(key);
      if (!fleet_from_snapshot)
        w.report(std::string{key}, "owned by the control plane: a worker receives it in its "
                                   "config snapshot");
    }
  for (auto key : other_keys)
    if (root[std::string{key}]) {
      owned.push_back(key);
      w.report(std::string{key}, "owned by the control plane: not allowed in a worker config");
    }
  if (auto t = root["translation"]; t && t.IsMap() && !fleet_from_snapshot)
    for (auto key : {"mode", "errorOnUnsupported"})
      if (t[key])
        w.report(std::string{"translation."} + key,
                 "owned by the control plane: the snapshot carries the translation failure "
                 "policy (pythonScripts and schemaResolutionTimeoutMs stay local)");
  return owned;
}

} // namespace qf::config::detail
