#include "net/boundary/fast_lane.hpp"

#include "actors/data/query_books.hpp"
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
  else if (st.waited_in_lane)
    node_->stats->queue_wait(series, static_cast<double>(*st.queued_ms) / 1000.0);
  if (!st.in_block)
    slot_taken(*node_->stats, series);
  if (st.id.empty()) // else it waited in the queue under this id
    st.id = node_->query_id(node_->next_ticket.fetch_add(1), id_prefix_);
  summary_->begin(st.id, sql::preview(st.sql, 160), st.route.group, st.cluster->name);
}

void fast_lane_books::ended(fast_statement st, io::event_loop& loop, std::string status,
                            std::string error) {
  if (!st.block_goes_on)
    give_back_slot(*node_->stats, *series_, *st.cluster);
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
  auto f = facts(std::move(st.id), std::move(st.sql), st.route, std::move(status),
                 std::move(error));
  f.cluster = st.cluster.get();
  f.created = st.created;
  f.created_wall_ms = st.created_wall_ms;
  // Its connection was the lane's to find: it started when admitted.
  f.admitted = f.started = st.created + std::chrono::milliseconds(st.queued_ms.value_or(0));
  f.ended = ended;
  f.rows = st.rows;
  file_record(*node_, std::move(f), &series);
  node_->in_flight.fetch_sub(1);
}

statement_facts fast_lane_books::facts(std::string id, std::string sql,
                                       const routing::decision& route, std::string status,
                                       std::string error) const {
  statement_facts f;
  f.id = std::move(id);
  f.user = user_;
  f.source = source_;
  f.catalog = catalog_;
  f.protocol = protocol_;
  f.sql = std::move(sql);
  f.status = std::move(status);
  f.error = std::move(error);
  f.group = route.group;
  f.routing_trace = trace_json(route);
  return f;
}

void fast_lane_books::waiting(const std::string& id, std::string_view sql,
                              const std::string& group) {
  summary_->begin(id, sql::preview(sql, 160), group, "");
  summary_->update({group, "", "QUEUED"});
}

void fast_lane_books::never_admitted(std::string id, std::string sql,
                                     const routing::decision& route,
                                     std::chrono::steady_clock::time_point since,
                                     int64_t since_wall_ms, std::string status,
                                     std::string error) {
  summary_->end();
  auto f = facts(std::move(id), std::move(sql), route, std::move(status), std::move(error));
  f.created = since;
  f.created_wall_ms = since_wall_ms;
  f.ended = io::round_clock::steady();
  file_record(*node_, std::move(f), nullptr);
}

void fast_lane_books::block_dropped(cluster_state& cluster) {
  give_back_slot(*node_->stats, *series_, cluster);
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
