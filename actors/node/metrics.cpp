// prometheus-cpp families behind qf::metrics.
#include "actors/node/metrics.hpp"
#include "actors/node/openmetrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <mutex>
#include <unordered_map>

namespace qf {

namespace {

const prometheus::Histogram::BucketBoundaries& duration_buckets() {
  static const prometheus::Histogram::BucketBoundaries buckets{
    0.01, 0.05, 0.1, 0.5, 1, 5, 15, 30, 60, 120, 300};
  return buckets;
}

const prometheus::Histogram::BucketBoundaries& queue_buckets() {
  static const prometheus::Histogram::BucketBoundaries buckets{
    0.1, 0.5, 1, 5, 15, 30, 60, 120, 300};
  return buckets;
}

} // namespace

struct metrics::impl {
  std::shared_ptr<prometheus::Registry> registry
    = std::make_shared<prometheus::Registry>();

  std::mutex series_mtx;
  std::unordered_map<std::string, std::shared_ptr<route_series>> series;

  prometheus::Family<prometheus::Counter>& queries
    = prometheus::BuildCounter()
        .Name("queryflux_queries_total")
        .Help("Finished queries by engine, group, status and protocol.")
        .Register(*registry);

  prometheus::Family<prometheus::Histogram>& duration
    = prometheus::BuildHistogram()
        .Name("queryflux_query_duration_seconds")
        .Help("Time from arrival to the end of execution.")
        .Register(*registry);

  prometheus::Family<prometheus::Gauge>& running
    = prometheus::BuildGauge()
        .Name("queryflux_running_queries")
        .Help("Queries holding a slot on a cluster.")
        .Register(*registry);

  prometheus::Family<prometheus::Counter>& pipelined
    = prometheus::BuildCounter()
        .Name("queryflux_pipelined_statements_total")
        .Help("Statements relayed to PostgreSQL behind another client's on one connection "
              "(pipelineDepth).")
        .Register(*registry);

  prometheus::Family<prometheus::Counter>& pipeline_moves
    = prometheus::BuildCounter()
        .Name("queryflux_pipelined_statements_moved_total")
        .Help("Pipelined statements run on another connection instead, because the statement "
              "ahead of them ran long, its client stopped reading, or the connection failed.")
        .Register(*registry);

  prometheus::Family<prometheus::Gauge>& queued
    = prometheus::BuildGauge()
        .Name("queryflux_queued_queries")
        .Help("Queries waiting for capacity in a cluster group.")
        .Register(*registry);

  prometheus::Family<prometheus::Histogram>& queue_duration
    = prometheus::BuildHistogram()
        .Name("queryflux_queue_duration_seconds")
        .Help("Time a query waited for capacity.")
        .Register(*registry);

  prometheus::Family<prometheus::Counter>& rejections
    = prometheus::BuildCounter()
        .Name("queryflux_queue_rejections_total")
        .Help("Queries rejected because a group's queue was full.")
        .Register(*registry);

  prometheus::Family<prometheus::Counter>& auth_failures
    = prometheus::BuildCounter()
        .Name("queryflux_auth_failures_total")
        .Help("Connections or requests refused for bad credentials.")
        .Register(*registry);

  prometheus::Family<prometheus::Gauge>& health
    = prometheus::BuildGauge()
        .Name("queryflux_cluster_health")
        .Help("1 for a cluster's current health status, 0 for the others.")
        .Register(*registry);

  prometheus::Family<prometheus::Counter>& reload_failures
    = prometheus::BuildCounter()
        .Name("queryflux_config_reload_failures_total")
        .Help("Configuration changes that could not be applied, by stage.")
        .Register(*registry);

  // Query history on its way to PostgreSQL (persistence.type: postgres).
  prometheus::Counter& history_written
    = prometheus::BuildCounter()
        .Name("queryflux_history_records_written_total")
        .Help("Query records stored in PostgreSQL.")
        .Register(*registry)
        .Add({});
  prometheus::Counter& history_write_failures
    = prometheus::BuildCounter()
        .Name("queryflux_history_write_failures_total")
        .Help("Batches of query records PostgreSQL did not take (retried).")
        .Register(*registry)
        .Add({});
  prometheus::Counter& history_dropped
    = prometheus::BuildCounter()
        .Name("queryflux_history_records_dropped_total")
        .Help("Query records dropped because the history queue was full.")
        .Register(*registry)
        .Add({});
  prometheus::Gauge& history_queue
    = prometheus::BuildGauge()
        .Name("queryflux_history_queue_depth")
        .Help("Query records waiting to be written to PostgreSQL.")
        .Register(*registry)
        .Add({});

  // A worker's history on its way to the control plane (or an endpoint).
  prometheus::Gauge& uplink_queued
    = prometheus::BuildGauge()
        .Name("queryflux_history_uplink_queued")
        .Help("Query records spooled on this worker, waiting to be sent upstream.")
        .Register(*registry)
        .Add({});
  prometheus::Family<prometheus::Counter>& uplink_sent
    = prometheus::BuildCounter()
        .Name("queryflux_history_uplink_sent_total")
        .Help("Query records this worker delivered upstream.")
        .Register(*registry);
  prometheus::Family<prometheus::Counter>& uplink_dropped
    = prometheus::BuildCounter()
        .Name("queryflux_history_uplink_dropped_total")
        .Help("Query records this worker dropped: the spool was full (overflow) or the "
              "destination refused them (rejected).")
        .Register(*registry);
  prometheus::Family<prometheus::Counter>& uplink_failures
    = prometheus::BuildCounter()
        .Name("queryflux_history_uplink_failures_total")
        .Help("Batches of query records that did not get through and are tried again.")
        .Register(*registry);
  prometheus::Family<prometheus::Counter>& history_ingested
    = prometheus::BuildCounter()
        .Name("queryflux_history_ingested_records_total")
        .Help("Workers' query records received: stored (accepted) or already stored "
              "(duplicate).")
        .Register(*registry);

  // Worker mode.
  prometheus::Gauge& config_stale
    = prometheus::BuildGauge()
        .Name("queryflux_worker_config_stale")
        .Help("1 while a worker runs a config copied from a peer that its control plane has "
              "not confirmed since.")
        .Register(*registry)
        .Add({});
  prometheus::Gauge& long_polls
    = prometheus::BuildGauge()
        .Name("queryflux_worker_config_long_polls")
        .Help("Workers' long polls for a new config parked on this control plane.")
        .Register(*registry)
        .Add({});

  // Shared capacity.
  prometheus::Family<prometheus::Counter>& lease_denied
    = prometheus::BuildCounter()
        .Name("queryflux_capacity_lease_denied_total")
        .Help("Times a worker had room under its own limit but the fleet's shared limit was "
              "full.")
        .Register(*registry);
  prometheus::Family<prometheus::Counter>& coordination_failures
    = prometheus::BuildCounter()
        .Name("queryflux_coordination_failures_total")
        .Help("Lease calls to the control plane that got no usable answer, by operation.")
        .Register(*registry);
};

metrics::metrics() : impl_(std::make_unique<impl>()) {
  impl_->reload_failures.Add({{"stage", "reload"}}); // visible at 0
}

metrics::~metrics() = default;

void metrics::query_finished(const std::string& engine_type,
                             const std::string& cluster_group,
                             const std::string& status,
                             const std::string& protocol, double seconds) {
  impl_->queries
    .Add({{"engine_type", engine_type},
          {"cluster_group", cluster_group},
          {"status", status},
          {"protocol", protocol}})
    .Increment();
  impl_->duration
    .Add({{"engine_type", engine_type}, {"cluster_group", cluster_group}},
         duration_buckets())
    .Observe(seconds);
}

struct metrics::route_series {
  prometheus::Gauge* running;
  prometheus::Histogram* queue_wait;
  prometheus::Histogram* duration;
  prometheus::Counter* succeeded;
  prometheus::Counter* pipelined;
  prometheus::Counter* moved;
  std::string cluster_group;
  std::string engine_type;
  std::string protocol;
};

std::shared_ptr<metrics::route_series> metrics::series(const std::string& cluster_group,
                                                       const std::string& cluster_name,
                                                       const std::string& engine_type,
                                                       const std::string& protocol) {
  // Kept by name, which is all a series is: a client that connects per
  // query asks for the same one with every connection.
  auto key = cluster_group;
  key.append(1, '\0').append(cluster_name).append(1, '\0').append(engine_type)
    .append(1, '\0').append(protocol);
  std::lock_guard guard{impl_->series_mtx};
  auto& cached = impl_->series[key];
  if (!cached)
    cached = make_series(cluster_group, cluster_name, engine_type, protocol);
  return cached;
}

std::shared_ptr<metrics::route_series> metrics::make_series(const std::string& cluster_group,
                                                            const std::string& cluster_name,
                                                            const std::string& engine_type,
                                                            const std::string& protocol) {
  return std::make_shared<route_series>(route_series{
    &impl_->running.Add({{"cluster_group", cluster_group}, {"cluster_name", cluster_name}}),
    &impl_->queue_duration.Add({{"cluster_group", cluster_group}}, queue_buckets()),
    &impl_->duration.Add({{"engine_type", engine_type}, {"cluster_group", cluster_group}},
                         duration_buckets()),
    &impl_->queries.Add({{"engine_type", engine_type},
                         {"cluster_group", cluster_group},
                         {"status", "Success"},
                         {"protocol", protocol}}),
    &impl_->pipelined.Add({{"cluster_group", cluster_group}, {"cluster_name", cluster_name}}),
    &impl_->pipeline_moves.Add({{"cluster_group", cluster_group}, {"cluster_name", cluster_name}}),
    cluster_group, engine_type, protocol});
}

void metrics::running_changed(route_series& s, int delta) {
  s.running->Increment(delta);
}

void metrics::statement_pipelined(route_series& s, uint32_t moves) {
  s.pipelined->Increment();
  if (moves > 0)
    s.moved->Increment(moves);
}

void metrics::queue_wait(route_series& s, double seconds) {
  s.queue_wait->Observe(seconds);
}

void metrics::query_finished(route_series& s, const std::string& status, double seconds) {
  if (status == "Success")
    s.succeeded->Increment();
  else
    impl_->queries
      .Add({{"engine_type", s.engine_type},
            {"cluster_group", s.cluster_group},
            {"status", status},
            {"protocol", s.protocol}})
      .Increment();
  s.duration->Observe(seconds);
}

void metrics::running_changed(const std::string& cluster_group,
                              const std::string& cluster_name, int delta) {
  impl_->running
    .Add({{"cluster_group", cluster_group}, {"cluster_name", cluster_name}})
    .Increment(delta);
}

void metrics::queued_set(const std::string& cluster_group, size_t queued) {
  impl_->queued.Add({{"cluster_group", cluster_group}})
    .Set(static_cast<double>(queued));
}

void metrics::queue_wait(const std::string& cluster_group, double seconds) {
  impl_->queue_duration.Add({{"cluster_group", cluster_group}}, queue_buckets())
    .Observe(seconds);
}

void metrics::queue_rejected(const std::string& cluster_group) {
  impl_->rejections.Add({{"cluster_group", cluster_group}}).Increment();
}

void metrics::auth_failed(const std::string& protocol) {
  impl_->auth_failures.Add({{"protocol", protocol}}).Increment();
}

void metrics::cluster_health(const std::string& cluster_name,
                             const std::string& status) {
  for (const char* s : {"PENDING", "HEALTHY", "UNHEALTHY", "UNKNOWN"})
    impl_->health.Add({{"cluster_name", cluster_name}, {"status", s}})
      .Set(status == s ? 1.0 : 0.0);
}

void metrics::forget_cluster(const std::string& cluster_name) {
  for (const char* s : {"PENDING", "HEALTHY", "UNHEALTHY", "UNKNOWN"}) {
    prometheus::Labels labels{{"cluster_name", cluster_name}, {"status", s}};
    if (impl_->health.Has(labels))
      impl_->health.Remove(&impl_->health.Add(labels));
  }
}

void metrics::config_reload_failed(const std::string& stage) {
  impl_->reload_failures.Add({{"stage", stage}}).Increment();
}

void metrics::expose_reload_stage(const std::string& stage) {
  impl_->reload_failures.Add({{"stage", stage}});
}

void metrics::lease_denied(const std::string& cluster_group) {
  impl_->lease_denied.Add({{"cluster_group", cluster_group}}).Increment();
}

void metrics::coordination_failed(const std::string& operation) {
  impl_->coordination_failures.Add({{"operation", operation}}).Increment();
}

void metrics::expose_coordination() {
  for (const char* op : {"acquire", "release", "renew", "sweep_lock"})
    impl_->coordination_failures.Add({{"operation", op}});
}

void metrics::worker_config_stale(bool stale) {
  impl_->config_stale.Set(stale ? 1 : 0);
}

void metrics::workers_waiting(size_t long_polls) {
  impl_->long_polls.Set(static_cast<double>(long_polls));
}

void metrics::history_written(size_t records) {
  impl_->history_written.Increment(static_cast<double>(records));
}

void metrics::history_write_failed() {
  impl_->history_write_failures.Increment();
}

void metrics::history_dropped(uint64_t records) {
  impl_->history_dropped.Increment(static_cast<double>(records));
}

void metrics::history_queued(size_t records) {
  impl_->history_queue.Set(static_cast<double>(records));
}

std::string metrics::render_openmetrics() const {
  return qf::render_openmetrics(impl_->registry->Collect());
}

std::string metrics::render() const {
  return prometheus::TextSerializer{}.Serialize(impl_->registry->Collect());
}

void metrics::uplink_queued(size_t records) {
  impl_->uplink_queued.Set(static_cast<double>(records));
}

void metrics::uplink_sent(size_t records) {
  impl_->uplink_sent.Add({}).Increment(static_cast<double>(records));
}

void metrics::uplink_dropped(const std::string& reason, uint64_t records) {
  impl_->uplink_dropped.Add({{"reason", reason}}).Increment(static_cast<double>(records));
}

void metrics::uplink_failed() {
  impl_->uplink_failures.Add({}).Increment();
}

void metrics::expose_uplink() {
  impl_->uplink_sent.Add({});
  impl_->uplink_failures.Add({});
  for (const char* reason : {"overflow", "rejected"})
    impl_->uplink_dropped.Add({{"reason", reason}});
}

void metrics::history_ingested(uint64_t accepted, uint64_t duplicates) {
  impl_->history_ingested.Add({{"result", "accepted"}}).Increment(static_cast<double>(accepted));
  impl_->history_ingested.Add({{"result", "duplicate"}})
    .Increment(static_cast<double>(duplicates));
}

} // namespace qf
