// What a wire session's fast lane owes the fleet for each statement it
// admits on the wire thread, from admission to its history record: the
// running gauge and the slot, the summary the running list shows, the
// metrics, the record. Shared by the PostgreSQL and MySQL wire sessions.
#pragma once

#include "actors/core/messages.hpp"
#include "actors/data/cluster_state.hpp"
#include "actors/data/query_books.hpp"
#include "actors/node/metrics.hpp"
#include "actors/routing/router_chain.hpp"
#include "io/round_clock.hpp"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace qf {

struct node_services;
class query_summary;
namespace io {
class event_loop;
}

/// A statement on the fast lane, from admission to its history record.
struct fast_statement {
  std::string id;
  std::string sql;
  routing::decision route;
  std::shared_ptr<cluster_state> cluster;
  std::chrono::steady_clock::time_point created = io::round_clock::steady();
  int64_t created_wall_ms = io::round_clock::wall_ms();
  int64_t rows = 0;
  /// Waited in the group's queue this long (its group counted the wait,
  /// unless it waited in the gate's lane).
  std::optional<int64_t> queued_ms;
  bool waited_in_lane = false;
  /// It leaves session state of its client's (sql::leaves_session_state, a
  /// SET not replayed): its connection stays the client's, under `pin` if
  /// it was not.
  bool pins = false;
  std::shared_ptr<void> pin;
  /// A SET or RESET outside a block that the session keeps and replays on
  /// the connections its next statements get, instead of pinning one.
  bool tracks = false;
  /// It reads what the client's statement before it left on its server
  /// connection (PostgreSQL's lastval(), currval()): it runs there, or, if
  /// another client's ran there since, fails rather than read theirs.
  bool follows_previous = false;
  /// It may leave such state (a sequence advanced): a statement after it
  /// that follows_previous runs where it ran.
  bool leaves_state_behind = false;
  /// It leaves nothing on its connection and running it twice changes
  /// nothing (a SELECT without INTO or FOR UPDATE/SHARE that calls only
  /// built-ins computing a value), on a cluster that pipelines: PostgreSQL
  /// may run it behind another client's on one connection (pipelineDepth).
  bool plain = false;
  /// Relayed behind another client's statement on one connection
  /// (pipelineDepth), and how often it was moved off one since.
  bool pipelined = false;
  uint32_t moves = 0;
  bool cancelled = false; // while its connection was opening
  /// A cancel went to the server (PQcancel, KILL QUERY) from a helper
  /// thread: unless the statement ended by it, it may still arrive.
  bool cancel_sent = false;
  // A transaction block holds one slot from its first statement to its
  // last, as the actor path's pinned connection does.
  bool in_block = false;    // admitted under the block's slot
  bool block_goes_on = false; // ended with the block open: the slot stays
};

/// A transaction block on a session's fast lane: its connection between
/// statements (null while one runs on it), and the slot it holds until
/// the server says the block ended.
template <class Connection>
struct fast_block {
  std::shared_ptr<cluster_state> cluster;
  routing::decision route;
  std::shared_ptr<Connection> conn;

  /// The block's next statement: on its cluster, under its slot, neither
  /// routed nor admitted. Its connection moves to the caller.
  fast_statement next(std::string sql, std::shared_ptr<Connection>& backend) {
    fast_statement st;
    st.sql = std::move(sql);
    st.route = route;
    st.cluster = cluster;
    st.in_block = true;
    backend = std::exchange(conn, nullptr);
    return st;
  }
};

/// Where a fast statement's connection goes once it ended: one the server
/// left inside a transaction stays in `block` (opened if need be), with
/// the slot; one that holds its client's own session state goes to
/// `keep(conn)`, any other back to `lane`; the block, if any, ends.
/// True when a block was lost with its connection: its client must go
/// too, rather than carry on outside the transaction it thinks it is in.
/// `hung_up(conn)` runs on the loop if the server hangs up the connection
/// while it waits between the block's statements; told once per block
/// (the connection only tells while no statement runs on it).
template <class Connection, class Lane, class HungUp, class Keep>
bool settle_connection(fast_statement& st, std::shared_ptr<Connection>& backend,
                       std::optional<fast_block<Connection>>& block, Lane& lane,
                       HungUp hung_up, Keep keep) {
  if (backend && backend->holds_transaction()) {
    if (!block) {
      block.emplace(fast_block<Connection>{st.cluster, st.route, nullptr});
      backend->when_hung_up_idle([hung_up = std::move(hung_up), which = backend.get()] {
        hung_up(which);
      });
    }
    block->conn = std::exchange(backend, nullptr);
    st.block_goes_on = true;
    return false;
  }
  bool lost = block && (!backend || !backend->reusable());
  if (block && backend)
    backend->when_hung_up_idle(nullptr); // back in the pool, nobody to tell
  if (backend && backend->reusable() && !backend->poolable())
    keep(std::exchange(backend, nullptr));
  else if (backend)
    lane.give_back(std::exchange(backend, nullptr));
  block.reset();
  return lost;
}

class fast_lane_books : public std::enable_shared_from_this<fast_lane_books> {
public:
  /// protocol: "postgresWire"; id_prefix: "pg_".
  fast_lane_books(std::shared_ptr<node_services> node, std::string protocol,
                  std::string id_prefix);

  /// Logged in: who the statements are recorded for. The summary shows
  /// the running statement to the admin API.
  void open(std::string user, std::string source, std::string catalog);
  /// The client switched databases (MySQL's USE): recorded from now on.
  void set_catalog(const std::string& catalog) {
    if (catalog != catalog_)
      catalog_ = catalog;
  }
  const std::shared_ptr<query_summary>& summary() const {
    return summary_;
  }

  /// The statement holds a slot and has left (in_flight counted it
  /// before): counted as running, given its id, shown.
  void admitted(fast_statement& st);

  /// The statement ended: counted off and its slot freed at once (unless
  /// its block goes on); its record is filed from `loop` once this
  /// round's answers went out.
  void ended(fast_statement st, io::event_loop& loop, std::string status, std::string error);

  /// The statement waits in its group's lane (group_gate): shown queued.
  void waiting(const std::string& id, std::string_view sql, const std::string& group);

  /// It left the lane without a slot (timed out, cancelled, its client
  /// gone): recorded with `status`; in_flight is the caller's.
  void never_admitted(std::string id, std::string sql, const routing::decision& route,
                      std::chrono::steady_clock::time_point since, int64_t since_wall_ms,
                      std::string status, std::string error);

  /// A block ended between statements (its client left): its slot freed.
  void block_dropped(cluster_state& cluster);

private:
  void record(fast_statement& st, std::chrono::steady_clock::time_point ended,
              metrics::route_series& series, std::string status, std::string error);
  /// What a record of this session's statement starts from.
  statement_facts facts(std::string id, std::string sql, const routing::decision& route,
                        std::string status, std::string error) const;
  /// The metric series of a route, kept while the statements take the same.
  metrics::route_series& series_for(const std::string& group,
                                    const std::shared_ptr<cluster_state>& cluster);
  /// The routing trace's JSON, kept per thread while the routers decide
  /// alike: for every session of a wire thread, so that a client that
  /// connects per statement does not pay for it each time.
  static const std::string& trace_json(const routing::decision& route);

  std::shared_ptr<node_services> node_;
  const std::string protocol_;
  const std::string id_prefix_;
  std::string user_;
  std::string source_;
  std::string catalog_;
  std::shared_ptr<query_summary> summary_;
  std::shared_ptr<metrics::route_series> series_;
  std::shared_ptr<cluster_state> series_cluster_;
  std::string series_group_;
};

/// The client left between a block's statements: the connection goes
/// with the block (the server rolls it back as it closes), the slot is freed.
template <class Connection>
void drop_block(std::optional<fast_block<Connection>>& block, fast_lane_books& books) {
  if (!block)
    return;
  books.block_dropped(*block->cluster);
  block.reset();
}

} // namespace qf
