// The node's Prometheus registry and the QueryFlux metric families, named
// and labelled as the spec writes them. Thread-safe; prometheus-cpp stays
// behind the pimpl so that only metrics.cpp includes it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace qf {

class metrics {
public:
  metrics();
  ~metrics();

  metrics(const metrics&) = delete;
  metrics& operator=(const metrics&) = delete;

  /// queryflux_queries_total and queryflux_query_duration_seconds.
  void query_finished(const std::string& engine_type,
                      const std::string& cluster_group,
                      const std::string& status, const std::string& protocol,
                      double seconds);

  /// queryflux_running_queries{cluster_group, cluster_name} += delta.
  void running_changed(const std::string& cluster_group,
                       const std::string& cluster_name, int delta);

  /// The series one route writes (group, cluster, engine and protocol),
  /// looked up once: labels are maps, and building them per query showed
  /// in the PostgreSQL wire fast lane's profile.
  struct route_series;
  std::shared_ptr<route_series> series(const std::string& cluster_group,
                                       const std::string& cluster_name,
                                       const std::string& engine_type,
                                       const std::string& protocol);
  void running_changed(route_series& s, int delta);
  /// queryflux_pipelined_statements_total, and _moved_total by `moves`.
  void statement_pipelined(route_series& s, uint32_t moves);
  void queue_wait(route_series& s, double seconds);
  void query_finished(route_series& s, const std::string& status, double seconds);

  /// queryflux_queued_queries{cluster_group}.
  void queued_set(const std::string& cluster_group, size_t queued);

  /// queryflux_queue_duration_seconds{cluster_group}.
  void queue_wait(const std::string& cluster_group, double seconds);

  /// queryflux_queue_rejections_total{cluster_group}.
  void queue_rejected(const std::string& cluster_group);

  /// queryflux_auth_failures_total{protocol}.
  void auth_failed(const std::string& protocol);

  /// queryflux_cluster_health{cluster_name, status}: 1 for the current one.
  void cluster_health(const std::string& cluster_name,
                      const std::string& status);

  /// A deleted cluster leaves queryflux_cluster_health.
  void forget_cluster(const std::string& cluster_name);

  /// queryflux_config_reload_failures_total{stage}.
  void config_reload_failed(const std::string& stage);
  /// The same series, shown at 0 before its first failure.
  void expose_reload_stage(const std::string& stage);

  /// queryflux_worker_config_stale.
  void worker_config_stale(bool stale);

  /// queryflux_worker_config_long_polls.
  void workers_waiting(size_t long_polls);

  /// queryflux_capacity_lease_denied_total{cluster_group}.
  void lease_denied(const std::string& cluster_group);

  /// queryflux_coordination_failures_total{operation}; expose_ shows the
  /// operations at 0 before their first failure.
  void coordination_failed(const std::string& operation);
  void expose_coordination();

  /// queryflux_history_records_written_total, _write_failures_total,
  /// _records_dropped_total and queryflux_history_queue_depth.
  void history_written(size_t records);
  void history_write_failed();
  void history_dropped(uint64_t records);
  void history_queued(size_t records);

  /// A worker's history uplink: queryflux_history_uplink_queued,
  /// _sent_total, _dropped_total{reason} (overflow: the spool was full;
  /// rejected: refused with a 4xx) and _failures_total (batches to try
  /// again). Shown at 0 from the start on a worker.
  void uplink_queued(size_t records);
  void uplink_sent(size_t records);
  void uplink_dropped(const std::string& reason, uint64_t records);
  void uplink_failed();
  void expose_uplink();

  /// queryflux_history_ingested_records_total{result}: workers' records a
  /// control plane stored (accepted) or had already (duplicate).
  void history_ingested(uint64_t accepted, uint64_t duplicates);

  /// The Prometheus text exposition format.
  std::string render() const;
  /// The same in OpenMetrics' text format (actors/node/openmetrics).
  std::string render_openmetrics() const;

private:
  std::shared_ptr<route_series> make_series(const std::string& cluster_group,
                                            const std::string& cluster_name,
                                            const std::string& engine_type,
                                            const std::string& protocol);

  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace qf
