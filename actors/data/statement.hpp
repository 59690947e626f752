// The STATEMENT actor, one per statement of every frontend: routes, waits
// for admission, runs the statement on a lent connection, and serves its
// rows page by page (Trino polls nextUri; wire sessions fetch). Releases
// its slot on every exit path, and records the query.
#pragma once

#include "actors/core/messages.hpp"
#include "actors/data/statement_spec.hpp"
#include "actors/node/node.hpp"
#include "actors/routing/router_chain.hpp"
#include "protocols/trino/client_session.hpp"
#include "protocols/trino/query_results.hpp"

#include <caf/response_promise.hpp>
#include <caf/stateful_actor.hpp>

#include <chrono>
#include <deque>
#include <optional>

namespace qf {

struct statement_state {
  static inline const char* name = "statement";
  using clock = std::chrono::steady_clock;

  enum class phase { queued, running, finished, failed };

  struct waiting_poll {
    uint64_t token;
    trino_respond respond;
  };

  statement_spec spec;
  std::shared_ptr<node_services> node;
  phase ph = phase::queued;

  routing::decision route;
  caf::actor group;
  std::shared_ptr<cluster_state> cluster;
  /// The route's metric series once it has a cluster: its running gauge
  /// counts the slot.
  std::shared_ptr<metrics::route_series> series;
  bool holds_slot = false;
  std::optional<conn_lease> lease;
  std::optional<pinned_connection> handover; // for keep_pinned
  /// The client left mid-transaction: roll back before pooling the
  /// connection again.
  bool rollback_on_return = false;
  bool conn_busy = false; // a request to the connection is outstanding
  bool fetching = false;
  bool exhausted = false;

  std::vector<column> columns;
  bool have_columns = false;
  std::deque<row_batch> buffer;
  /// The server's notices not handed to a wire session yet.
  std::vector<engines::notice> notices;
  /// Every notice so far, as a Trino client's warnings.
  std::vector<trino::warning> warnings;
  size_t front_offset = 0; // rows of buffer.front() already served
  size_t buffered_rows = 0;
  int64_t rows = 0;
  int64_t affected = -1;    // rows a command changed, when the engine says
  std::string sqlstate;     // the backend's, when it failed with one
  int32_t vendor_code = 0;  // the backend's error number, likewise
  std::optional<trino::query_error> error;
  std::string backend_query_id; // the engine's own id (Trino's), when it has one

  uint64_t served_token = 0;
  std::string served_page; // kept so that a retried GET gets the same page
  bool final_served = false;
  /// True until the query stops counting towards node_services::in_flight.
  std::shared_ptr<std::atomic<bool>> in_flight
    = std::make_shared<std::atomic<bool>>(true);
  std::optional<waiting_poll> waiting;
  std::shared_ptr<query_liveness> live; // never null: a private one if unset
  /// A Trino query that succeeded: its record, filed as its last page goes
  /// out, or as abandoned if the actor ends before (the client never
  /// fetched its results; a drain does not wait for such a client).
  struct pending_record {
    query_record record;
    double seconds = 0;
    std::shared_ptr<metrics::route_series> series;
  };
  std::shared_ptr<std::optional<pending_record>> pending
    = std::make_shared<std::optional<pending_record>>();
  /// A wire session waiting for rows (fetch), and how many it takes.
  std::optional<caf::response_promise> fetch_waiting;
  bool pull_waiting = false; // the same for spec.page_sink
  uint32_t fetch_max = 0;

  clock::time_point created = clock::now();
  clock::time_point admitted{};
  clock::time_point started{};
  clock::time_point ended{};
  int64_t created_wall_ms = 0;
  int64_t started_wall_ms = 0;
  int64_t finished_wall_ms = 0;
};

/// The answer to POST /v1/statement: QUEUED with a nextUri, neither data
/// nor error, as Trino answers. trino-client drops whatever a first response
/// carries besides nextUri, so rows or errors there would be lost.
std::string trino_submitted_page(const std::string& base_address,
                                 const std::string& id, const std::string& slug);

/// Handlers:
/// - (poll, token, respond): answers the page for token once a page is full,
///   the query ended, or the reaper says the poll waited long enough;
///   token 0 is the POST's page (see above);
/// - (deadline): from the reaper: answer the waiting poll with what there is;
/// - (cancel, bool abandoned): cancels the query and frees its slot; an
///   abandoned query ends at once;
/// - (info, respond): Trino's QueryInfo JSON for GET /v1/query/{id};
/// - (fetch, uint32_t max_rows) -> statement_page: for wire sessions; the
///   actor ends after the last page;
/// - (pull, uint32_t max_rows): the same, answered to spec.page_sink.
caf::behavior statement_actor(caf::stateful_actor<statement_state>* self,
                          statement_spec spec,
                          std::shared_ptr<node_services> node);

/// Spawns a statement actor, counted in node_services::in_flight from now:
/// the actor first runs later, on a scheduler thread, and a drain that
/// began meanwhile would have found nothing in flight and stopped the
/// node under a query its client had just been told was queued.
caf::actor spawn_statement(const std::shared_ptr<node_services>& node, statement_spec spec);

} // namespace qf
