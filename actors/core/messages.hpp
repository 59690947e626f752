// The message vocabulary between QueryFlux actors: atoms, message structs
// and errors. Everything here stays inside one process, so message types are
// marked unsafe (never serialized) rather than given inspectors.
#pragma once

#include "actors/node/metrics.hpp"
#include "engines/engine.hpp"
#include "protocols/common/query_record.hpp"
#include "protocols/common/rows.hpp"

#include <caf/actor.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/error.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <memory>
#include <string>
#include <vector>

namespace qf {

struct cluster_state;

namespace atom {
// CAF 0.17 atoms: at most 10 characters.
using admit = caf::atom_constant<caf::atom("admit")>;
using withdraw = caf::atom_constant<caf::atom("withdraw")>;
using release = caf::atom_constant<caf::atom("release")>;
using timeout = caf::atom_constant<caf::atom("timeout")>;
using stats = caf::atom_constant<caf::atom("stats")>;
using acquire = caf::atom_constant<caf::atom("acquire")>;
using check = caf::atom_constant<caf::atom("check")>;
using execute = caf::atom_constant<caf::atom("execute")>;
using fetch = caf::atom_constant<caf::atom("fetch")>;
using close = caf::atom_constant<caf::atom("close")>;
using poll = caf::atom_constant<caf::atom("poll")>;
using deadline = caf::atom_constant<caf::atom("deadline")>;
using cancel = caf::atom_constant<caf::atom("cancel")>;
using info = caf::atom_constant<caf::atom("info")>;
using get = caf::atom_constant<caf::atom("get")>;
using tick = caf::atom_constant<caf::atom("tick")>;
using flush = caf::atom_constant<caf::atom("flush")>;
using activate = caf::atom_constant<caf::atom("activate")>;
using retire = caf::atom_constant<caf::atom("retire")>;
using update = caf::atom_constant<caf::atom("update")>;
using put = caf::atom_constant<caf::atom("put")>;
using erase = caf::atom_constant<caf::atom("erase")>;
using routing = caf::atom_constant<caf::atom("routing")>;
using reload = caf::atom_constant<caf::atom("reload")>;
using pull = caf::atom_constant<caf::atom("pull")>;
// Worker mode.
using ok = caf::ok_atom;
using publish = caf::atom_constant<caf::atom("publish")>;
using wait = caf::atom_constant<caf::atom("wait")>;
using heartbeat = caf::atom_constant<caf::atom("heartbeat")>;
using enroll = caf::atom_constant<caf::atom("enroll")>;
using confirm = caf::atom_constant<caf::atom("confirm")>;
using polled = caf::atom_constant<caf::atom("polled")>;
using beaten = caf::atom_constant<caf::atom("beaten")>;
using drain = caf::atom_constant<caf::atom("drain")>;
using bootstrap = caf::atom_constant<caf::atom("bootstrap")>;
using resolved = caf::atom_constant<caf::atom("resolved")>;
using copied = caf::atom_constant<caf::atom("copied")>;
using changed = caf::atom_constant<caf::atom("changed")>;
// Shared capacity.
using want = caf::atom_constant<caf::atom("want")>;
using renew = caf::atom_constant<caf::atom("renew")>;
using leased = caf::atom_constant<caf::atom("leased")>;
using sweep = caf::atom_constant<caf::atom("sweep")>;
using leader = caf::atom_constant<caf::atom("leader")>;
using follow = caf::atom_constant<caf::atom("follow")>;
using sweep_lock = caf::atom_constant<caf::atom("sweeplock")>;
using swept = caf::atom_constant<caf::atom("swept")>;
using reconcile = caf::atom_constant<caf::atom("reconcile")>;
using recheck = caf::atom_constant<caf::atom("recheck")>;
using delivered = caf::atom_constant<caf::atom("delivered")>;
} // namespace atom

/// Errors that cross actor boundaries, in category "qf".
enum class errc : uint8_t {
  queue_full = 1,
  queue_timeout,
  cancelled,
  group_disabled,
  engine_unavailable,
  engine_syntax,
  engine_user,
  engine_internal,
  /// A worker before its first snapshot, a control plane before its first
  /// config: nothing to serve yet.
  not_configured,
  unknown_worker,
  storage_error,
  /// A lease call from a worker whose leases the control plane does not
  /// know (it restarted, or they expired): the worker renews first.
  unknown_session,
  /// A lease call that names a cluster or group the config does not
  /// have: nothing changed.
  bad_lease,
  /// A release of more slots than the worker holds: nothing changed.
  lease_not_held,
  /// A lease call older than the last one applied.
  stale_lease_call,
  /// A control-plane replica that does not own the leases could not reach
  /// the one that does (or none does yet): the worker tries again.
  lease_owner_unavailable,
};

caf::error make_error(errc code, std::string message);

/// An error that also carries the backend's SQLSTATE and error number.
caf::error make_error(errc code, std::string message, std::string sqlstate,
                      int32_t vendor_code = 0);

/// The code of a "qf" error, or nullopt for CAF's own errors.
std::optional<errc> code_of(const caf::error& err);

/// The human-readable message an error carries.
std::string message_of(const caf::error& err);

/// The backend SQLSTATE an error carries, or "".
std::string sqlstate_of(const caf::error& err);

/// The backend error number an error carries, or 0.
int32_t vendor_code_of(const caf::error& err);

/// Maps an engine failure onto an error code.
errc from_engine(engines::error_kind kind);

/// A group's answer to admit: the cluster whose slot the query now holds.
struct admission {
  std::shared_ptr<cluster_state> cluster;
};

/// A connection lent by a cluster. The engine handle is there so that a
/// cancel can interrupt the statement while the connection actor is busy.
struct conn_lease {
  caf::actor actor;
  std::shared_ptr<engines::connection> engine;
};

/// One batch of a statement's rows; more is false after the last batch.
struct result_batch {
  row_batch rows;
  bool more = false;
  int64_t affected = -1; // with the last batch: rows a command changed
  std::vector<engines::notice> notices; // the server's, up to these rows
};

/// A started statement: its columns and, to save a round trip, its first
/// batch of rows.
struct statement_result {
  std::vector<column> columns;
  result_batch first;
  std::string backend_query_id; // the engine's own id, where it has one
};

/// What a connection actor runs: SQL and the values of its placeholders.
struct statement_request {
  std::string sql;
  engines::parameters params;
  uint32_t max_rows = 4096; // of the first batch
  engines::session_context session;
};

/// A transaction's backend connection and capacity slot, which a wire
/// session holds between statements until COMMIT or ROLLBACK.
struct pinned_connection {
  std::shared_ptr<cluster_state> cluster;
  conn_lease lease;
  std::string group;
  /// The running gauge the slot is counted in (actors/data/query_books).
  std::shared_ptr<metrics::route_series> series;
};

/// What a wire-protocol session gets from a statement: rows as they come,
/// the columns with every page, done after the last one, or an error
/// (Trino's error code, which each frontend maps onto its own codes).
struct statement_page {
  std::vector<column> columns;
  row_batch rows;
  bool done = false;
  bool failed = false;
  int64_t affected = -1; // with done: rows a command changed, if known
  std::string error_message;
  std::string error_name;     // e.g. QUERY_QUEUE_FULL
  std::string error_sqlstate; // the backend's, when it gave one
  int32_t error_vendor_code = 0; // the backend's error number, when it gave one
  std::vector<engines::notice> notices; // the server's, before these rows
  /// With the last page of a statement inside a transaction: the
  /// connection and slot, handed back to the session.
  std::optional<pinned_connection> pinned;
  /// statement_spec::admit_only: the slot the statement now holds, for
  /// the session to run it on its fast lane.
  std::shared_ptr<cluster_state> admitted;
};

/// What a Trino HTTP request gets back from a query actor.
struct trino_reply {
  int http_status = 200;
  std::string body; // QueryResults or QueryInfo JSON
};

using trino_respond = std::function<void(trino_reply)>;

/// An admin API answer: an HTTP status and a JSON body, like a Trino one.
using admin_respond = trino_respond;

/// Milliseconds since the epoch, as query records carry their times.
int64_t wall_ms();

/// Whole milliseconds from one steady time to another; 0 when either is
/// unset (a query that never started has no execution time).
int64_t ms_between(std::chrono::steady_clock::time_point from,
                   std::chrono::steady_clock::time_point to);

/// Which records GET /admin/queries lists.
struct history_filter {
  std::string search; // substring of the SQL
  std::string user;
  std::string cluster_group;
  std::string cluster_name;
  std::string status;
  std::string worker; // the worker that ran it (worker mode)
  std::string query_id; // ours or the engine's
  std::string source;
  std::string external_url;
  int64_t from_ms = 0;
  int64_t to_ms = 0;
  size_t limit = 100;
  size_t offset = 0;
};

/// Queries per time bucket of their arrival, and how many of them failed
/// or were denied: the dashboard's chart. Bucket i starts at
/// from_ms + i * bucket_ms.
struct query_buckets {
  int64_t from_ms = 0;
  int64_t bucket_ms = 60'000;
  std::vector<uint64_t> queries;
  std::vector<uint64_t> errors;

  query_buckets() = default;
  query_buckets(int64_t from, int64_t width, size_t n)
    : from_ms(from), bucket_ms(width), queries(n, 0), errors(n, 0) {
    // nop
  }

  /// Counts a query that finished at `at_ms`, if it falls in a bucket.
  void count(int64_t at_ms, bool failed) {
    if (at_ms < from_ms || bucket_ms <= 0)
      return;
    auto i = static_cast<size_t>((at_ms - from_ms) / bucket_ms);
    if (i >= queries.size())
      return;
    ++queries[i];
    errors[i] += failed ? 1 : 0;
  }
};

} // namespace qf

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(qf::admission)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<qf::query_record>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(qf::conn_lease)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(qf::statement_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(qf::statement_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(qf::result_batch)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(qf::trino_respond)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(qf::history_filter)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(qf::query_buckets)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(qf::statement_page)
