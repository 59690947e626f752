#include "actors/data/query_books.hpp"

#include "actors/node/node.hpp"

namespace qf {

void slot_taken(metrics& stats, metrics::route_series& series) {
  stats.running_changed(series, 1);
}

void give_back_slot(metrics& stats, metrics::route_series& series, cluster_state& cluster) {
  stats.running_changed(series, -1);
  cluster.release();
}

query_record make_record(statement_facts f) {
  query_record r;
  r.proxy_query_id = std::move(f.id);
  r.user = std::move(f.user);
  r.source = std::move(f.source);
  r.catalog = std::move(f.catalog);
  r.schema = std::move(f.schema);
  r.cluster_group = std::move(f.group);
  if (f.cluster) {
    r.cluster_name = f.cluster->name;
    r.engine_type = f.cluster->engine_type;
  }
  r.protocol = std::move(f.protocol);
  r.sql = std::move(f.sql);
  r.status = std::move(f.status);
  r.error_message = std::move(f.error);
  r.routing_trace = std::move(f.routing_trace);
  r.created_at_ms = f.created_wall_ms;
  const auto& started = f.started;
  r.queue_duration_ms = ms_between(f.created, f.admitted.value_or(f.ended));
  r.execution_duration_ms = started ? ms_between(*started, f.ended) : 0;
  r.started_at_ms = f.started_wall_ms != 0 ? f.started_wall_ms
                    : started           ? f.created_wall_ms + ms_between(f.created, *started)
                                        : 0;
  r.finished_at_ms = f.finished_wall_ms != 0 ? f.finished_wall_ms
                                             : f.created_wall_ms + ms_between(f.created, f.ended);
  r.rows_returned = f.rows;
  r.backend_query_id = std::move(f.backend_query_id);
  r.external_url = std::move(f.external_url);
  return r;
}

void file_record(const node_services& node, statement_facts f, metrics::route_series* series) {
  auto seconds = std::chrono::duration<double>(f.ended - f.created).count();
  node.record_finished(make_record(std::move(f)), seconds, series);
}

} // namespace qf
