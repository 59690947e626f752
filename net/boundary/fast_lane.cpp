#include "net/boundary/fast_lane.hpp"

#include "actors/data/query_registry.hpp"
#include "actors/node/node.hpp"
#include "io/event_loop.hpp"
#include "protocols/sql/statements.hpp"

#include <algorithm>

namespace qf {

fast_lane_books::fast_lane_books(std::shared_ptr<node_services> node, std::string protocol,
                                 std::string id_prefix)
  : node_(std::move(node)), protocol_(std::move(protocol)), id_prefix_(std::move(id_prefix)) {
  // nop
}

void fast_lane_books::open(std::string user, std::string source, std::string catalog) {
  summary_ = std::make_shared<query_summary>(user, protocol_);
  user_ = std::move(user);
  source_ = std::move(source);
  catalog_ = std::move(catalog);
}

void fast_lane_books::admitted(fast_statement& st) {
  auto& series = series_for(st.route.group, st.cluster);
  if (!st.queued_ms)
    node_->stats->queue_wait(series, 0.0);
  if (!st.in_block)
    node_->stats->running_changed(series, 1);
  if (st.id.empty()) // else it waited in the queue under this id
    st.id = node_->query_id(node_->next_ticket.fetch_add(1), id_prefix_);
  summary_->begin(st.id, sql::preview(st.sql, 160), st.route.group, st.cluster->name);
}

void fast_lane_books::ended(fast_statement st, io::event_loop& loop, std::string status,
                            std::string error) {
  if (!st.block_goes_on) {
    node_->stats->running_changed(*series_, -1); // before a waiter raises it
    st.cluster->release();
  }
  if (st.pipelined)
    node_->stats->statement_pipelined(*series_, st.moves);
  summary_->end();
  // Posted: no client waits for its history record, so it comes after
  // the answers of this round of events. in_flight covers the record, so
  // a drain waits for it.
  loop.post([self = shared_from_this(), st = std::move(st),
             ended = io::round_clock::steady(), series = series_,
             status = std::move(status), error = std::move(error)]() mutable {
    self->record(st, ended, *series, std::move(status), std::move(error));
  });
}

void fast_lane_books::record(fast_statement& st, std::chrono::steady_clock::time_point ended,
                             metrics::route_series& series, std::string status,
                             std::string error) {
  query_record r;
  r.proxy_query_id = std::move(st.id);
  r.user = user_;
  r.source = source_;
  r.catalog = catalog_;
  r.cluster_group = st.route.group;
  r.cluster_name = st.cluster->name;
  r.engine_type = st.cluster->engine_type;
  r.protocol = protocol_;
  r.sql = std::move(st.sql);
  r.status = std::move(status);
  r.error_message = std::move(error);
  r.routing_trace = trace_json(st.route);
  r.created_at_ms = st.created_wall_ms;
  auto queued = st.queued_ms.value_or(0);
  auto took = ms_between(st.created, ended);
  r.started_at_ms = st.created_wall_ms + queued;
  r.finished_at_ms = st.created_wall_ms + took;
  r.queue_duration_ms = queued;
  r.execution_duration_ms = took - queued;
  r.rows_returned = st.rows;
  node_->record_finished(std::move(r),
                         std::chrono::duration<double>(ended - st.created).count(), &series);
  node_->in_flight.fetch_sub(1);
}

void fast_lane_books::block_dropped(cluster_state& cluster) {
  node_->stats->running_changed(*series_, -1);
  cluster.release();
}

metrics::route_series& fast_lane_books::series_for(const std::string& group,
                                                   const std::shared_ptr<cluster_state>& cluster) {
  if (!series_ || series_cluster_ != cluster || series_group_ != group) {
    series_ = node_->stats->series(group, cluster->name, cluster->engine_type, protocol_);
    series_cluster_ = cluster;
    series_group_ = group;
  }
  return *series_;
}

const std::string& fast_lane_books::trace_json(const routing::decision& route) {
  thread_local std::optional<routing::decision> traced;
  thread_local std::string json;
  auto same_steps = [](const auto& a, const auto& b) {
    return a.router == b.router && a.matched == b.matched && a.result == b.result;
  };
  bool same = traced && traced->group == route.group && traced->denied == route.denied
              && traced->used_fallback == route.used_fallback
              && std::equal(traced->trace.begin(), traced->trace.end(), route.trace.begin(),
                            route.trace.end(), same_steps);
  if (!same) {
    json = routing::trace_to_json(route);
    traced = route;
  }
  return json;
}

} // namespace qf
