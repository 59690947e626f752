// The BOOKS of a statement, one set for every frontend path: its slot from
// admission to release (the running gauge with it) and, when it ends, its
// metrics and history record. The statement actor (Trino HTTP and the wire
// sessions' actor path) and the PostgreSQL/MySQL wire fast lane both keep
// them through these functions and no others, so that what a slot and a
// record are cannot drift apart between the paths; with leases behind the
// slots (worker mode) a slot counted twice or never given back would cost
// the whole fleet, not one node.
#pragma once

#include "actors/core/messages.hpp"
#include "actors/data/cluster_state.hpp"
#include "actors/node/metrics.hpp"

#include <chrono>
#include <optional>
#include <string>

namespace qf {

struct node_services;

/// A statement took a slot on a cluster (admission, or a transaction's
/// first statement): counted as running on its route's series.
void slot_taken(metrics& stats, metrics::route_series& series);

/// The one way a slot goes back: the gauge drops first (a waiter that the
/// cluster's release() admits raises it at once), then the cluster frees
/// the slot, or gives it to its next waiter, or back to the lease.
void give_back_slot(metrics& stats, metrics::route_series& series, cluster_state& cluster);

/// What a statement's history record is made of, as every path knows it
/// when the statement ends.
struct statement_facts {
  using clock = std::chrono::steady_clock;
  std::string id;
  std::string user;
  std::string source;
  std::string catalog;
  std::string schema;
  std::string protocol;
  std::string sql;
  std::string status; // Success, Failed, Cancelled, Denied
  std::string error;
  std::string group;
  std::string routing_trace; // JSON
  /// Where it ran; null when it never got a slot.
  const cluster_state* cluster = nullptr;
  clock::time_point created;
  int64_t created_wall_ms = 0;
  /// When it got its slot: none when it never did.
  std::optional<clock::time_point> admitted;
  /// When its statement went to the engine: none when it never did.
  std::optional<clock::time_point> started;
  clock::time_point ended;
  /// Read off the wall clock where the path has them; else from `created`
  /// and the steady times.
  int64_t started_wall_ms = 0;
  int64_t finished_wall_ms = 0;
  int64_t rows = 0;
  /// The engine's own id of the query and its cluster's externalUrl.
  std::string backend_query_id;
  std::string external_url;
};

query_record make_record(statement_facts f);

/// The statement ended: its metrics (on `series`, its route's, when it
/// had a slot) and its history record.
void file_record(const node_services& node, statement_facts f, metrics::route_series* series);

} // namespace qf
