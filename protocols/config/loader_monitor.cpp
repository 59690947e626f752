// monitor (every cluster's health check) and clusters.<name>.monitor (one
// cluster's own), with Trino Gateway's monitor types and METRICS bounds.
#include "protocols/config/loader_sections.hpp"

#include <cmath>

namespace qf::config::detail {

namespace {

void read_bounds(walker& w, const YAML::Node& parent, const std::string& path,
                 std::string_view key, std::map<std::string, double>& out) {
  auto n = parent[std::string{key}];
  if (!n || n.IsNull())
    return;
  auto p = walker::join(path, key);
  if (!w.expect_map(n, p))
    return;
  out.clear(); // given: these bounds, not the defaults as well
  for (const auto& kv : n) {
    auto name = kv.first.Scalar();
    double value = 0;
    if (!kv.second.IsScalar() || !YAML::convert<double>::decode(kv.second, value)
        || !std::isfinite(value))
      w.report(walker::join(p, name), "expected a number");
    else if (name.empty())
      w.report(p, "a metric name may not be empty");
    else
      out[name] = value;
  }
}

} // namespace

void read_health_probe(walker& w, const YAML::Node& n, const std::string& path,
                       health_probe& out) {
  if (auto t = n["type"]; t && !t.IsNull()) {
    auto name = w.string_of(t, path + ".type");
    if (auto type = name ? monitor_type_from_string(*name) : std::nullopt)
      out.type = *type;
    else if (name)
      w.report(path + ".type", "unknown monitor type \"" + *name
                                 + "\" (INFO_API, JDBC, JMX, METRICS or NOOP)");
  }
  w.read_uint(n, path, "retries", out.retries, 10);
  w.read(n, path, "metricsEndpoint", out.metrics_endpoint);
  if (out.metrics_endpoint.empty() || out.metrics_endpoint.front() != '/')
    w.report(path + ".metricsEndpoint", "expected a path starting with /");
  read_bounds(w, n, path, "metricMinimumValues", out.metric_minimum_values);
  read_bounds(w, n, path, "metricMaximumValues", out.metric_maximum_values);
  w.read(n, path, "runningQueriesMetricName", out.running_queries_metric_name);
  w.read(n, path, "queuedQueriesMetricName", out.queued_queries_metric_name);
}

void read_monitor(walker& w, const YAML::Node& n, monitor& out) {
  if (!w.expect_map(n, "monitor"))
    return;
  w.check_keys(n, "monitor",
               {"taskDelay", "checkTimeout", "type", "retries", "metricsEndpoint",
                "metricMinimumValues", "metricMaximumValues", "runningQueriesMetricName",
                "queuedQueriesMetricName"});
  w.read(n, "monitor", "taskDelay", out.task_delay);
  w.read(n, "monitor", "checkTimeout", out.check_timeout);
  read_health_probe(w, n, "monitor", out.probe);
}

void read_cluster_stats_configuration(walker& w, const YAML::Node& n, monitor& out) {
  const std::string path = "clusterStatsConfiguration";
  if (!w.expect_map(n, path))
    return;
  w.check_keys(n, path, {"monitorType"});
  if (auto t = n["monitorType"]; t && !t.IsNull()) {
    auto name = w.string_of(t, path + ".monitorType");
    if (auto type = name ? monitor_type_from_string(*name) : std::nullopt)
      out.probe.type = *type;
    else if (name)
      w.report(path + ".monitorType", "unknown monitor type \"" + *name
                                        + "\" (INFO_API, JDBC, JMX, METRICS or NOOP; UI_API "
                                          "is not built: use JDBC for per-user counts)");
  }
}

void read_cluster_monitor(walker& w, const YAML::Node& n, const std::string& path,
                          const health_probe& global, cluster& out) {
  if (!w.expect_map(n, path))
    return;
  w.check_keys(n, path,
               {"type", "retries", "metricsEndpoint", "metricMinimumValues",
                "metricMaximumValues", "runningQueriesMetricName", "queuedQueriesMetricName"});
  // What it does not say, it takes from the global monitor.
  auto probe = global;
  read_health_probe(w, n, path, probe);
  // A type it names itself must suit it; one it takes from the global
  // monitor falls back to INFO_API on other engines, as without a block.
  bool http_only = probe.type == monitor_type::jmx || probe.type == monitor_type::metrics;
  if (n["type"] && http_only && out.engine != engine_kind::trino)
    w.report(path + ".type", std::string{to_string(probe.type)}
                               + " reads Trino's own endpoints: only trino clusters");
  out.monitor = std::move(probe);
}

} // namespace qf::config::detail
