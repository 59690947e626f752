// What the nodes of a fleet and the control plane say to each other about
// engine reconciliation (POST /worker/sweep-lock/acquire, /release,
// /publish; GET /worker/sweep-lock/counts). A sweep lock is a named lock
// with a time to live: the node holding "engine-reconcile" asks the
// engines how many queries they run (Trino's /v1/query, PostgreSQL's
// pg_stat_activity, MySQL's processlist) and publishes the counts; every
// other node reads them instead of asking the engines itself. Each grant
// carries a fencing token that only grows, and a publish must show the
// holder's current one, so a holder whose lock expired (a long pause, a
// cut link) cannot overwrite its successor's counts. Pure: no sockets, no
// clock.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qf::worker_api {

/// A sweep-lock call body larger than this is refused (413).
constexpr size_t max_sweep_call_bytes = 256 * 1024;
/// At most this many counts in one publish.
constexpr size_t max_engine_counts = 1024;
/// The lock engine reconciliation takes.
constexpr std::string_view engine_reconcile_lock = "engine-reconcile";

enum class sweep_verb : uint8_t { acquire, release, publish, counts };

std::string_view to_string(sweep_verb v);
std::optional<sweep_verb> sweep_verb_named(std::string_view s);

/// One cluster's running queries as the engine itself counts them (every
/// client's, not only ours); in an answer also who published it and how
/// long ago.
struct engine_count {
  std::string cluster;
  uint32_t running = 0;
  std::string publisher; // answers only
  uint64_t age_ms = 0;   // answers only

  bool operator==(const engine_count&) const = default;
};

struct sweep_call {
  std::string name;   // the lock
  std::string holder; // the node asking: a worker's or replica's name
  /// release, publish: the token the grant gave.
  uint64_t token = 0;
  /// acquire: how long the lock lives unless acquired again by its holder.
  uint32_t ttl_secs = 30;
  std::vector<engine_count> counts; // publish

  bool operator==(const sweep_call&) const = default;
};

std::string encode(sweep_verb v, const sweep_call& c);

struct sweep_call_outcome {
  std::optional<sweep_call> call;
  std::string error; // set when call is not
};

/// Reads and checks a call's body: bounded size and depth, a lock name of
/// letters, digits, '.', '_' and '-', a holder's name, a token of 1 or
/// more (release, publish), a TTL of 1 to 3600 s (acquire), counts of 0 to
/// 1000000 on named clusters, none twice (publish). counts takes no body:
/// its lock name comes from the query string. Never throws.
sweep_call_outcome decode_sweep_call(sweep_verb v, std::string_view body);

/// The lock name of a counts query (?name=...), the engine lock's when
/// absent; none when malformed.
std::optional<std::string> counts_lock_name(std::string_view query);

struct sweep_answer {
  /// acquire: whether the caller holds the lock now; holder is then the
  /// caller, else the node that does.
  bool granted = false;
  std::string holder;
  uint64_t token = 0;
  uint64_t expires_in_ms = 0;
  /// publish and counts: the last published count of every cluster.
  std::vector<engine_count> counts;

  bool operator==(const sweep_answer&) const = default;
};

std::string encode(sweep_verb v, const sweep_answer& a);

/// An answer to a call of verb v; none when malformed.
std::optional<sweep_answer> decode_sweep_answer(sweep_verb v, std::string_view body);

} // namespace qf::worker_api
