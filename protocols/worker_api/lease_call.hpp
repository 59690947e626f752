// What a worker's capacity actor and the control plane's lease table say
// to each other (POST /worker/capacity/acquire, /release, /renew). Leases
// are slots on a cluster, counted per worker: a worker holds N of a
// cluster's maxRunningQueries and runs at most N queries there. Every call
// carries the worker's incarnation and a sequence number; the worker sends
// one call at a time and repeats a call it got no answer to with the same
// number, so a repeat is answered as the first was and never applied
// twice. Pure: no sockets, no clock.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qf::worker_api {

/// A lease call body larger than this is refused (413).
constexpr size_t max_lease_call_bytes = 256 * 1024;
/// At most this many items in one call.
constexpr size_t max_lease_items = 1024;
/// A parked acquire waits at most this long for slots to free up.
constexpr uint32_t max_lease_wait_ms = 1000;

enum class lease_verb : uint8_t { acquire, release, renew };

std::string_view to_string(lease_verb v);

/// Slots on one cluster: wanted (acquire, with the group the queries were
/// routed to), given back (release) or held (renew).
struct lease_item {
  std::string cluster;
  std::string group; // acquire only
  uint32_t count = 0;

  bool operator==(const lease_item&) const = default;
};

struct lease_call {
  std::string worker;
  std::string incarnation;
  uint64_t seq = 0;
  std::vector<lease_item> items;
  /// acquire: how long the control plane may hold the call for slots.
  uint32_t wait_ms = 0;
  /// renew: the worker's heartbeat interval, which its leases' TTL follows.
  uint32_t heartbeat_interval_secs = 10;

  bool operator==(const lease_call&) const = default;
};

/// The list's member name per verb: requests, releases, holding.
std::string_view items_member(lease_verb v);

std::string encode(lease_verb v, const lease_call& c);

struct lease_call_outcome {
  std::optional<lease_call> call;
  std::string error; // set when call is not
};

/// Reads and checks a call: bounded size and depth, a valid worker name,
/// an incarnation, seq >= 1, known clusters' names as strings, counts of
/// 1 to 100000 (renew: 0 too), no cluster twice. Never throws.
lease_call_outcome decode_lease_call(lease_verb v, std::string_view body);

/// The control plane's answer to an acquire.
struct acquire_answer {
  struct denial {
    std::string cluster;
    std::string group;
    uint32_t count = 0;   // not granted
    uint32_t running = 0; // the fleet's, at the time
    uint32_t max = 0;
    bool operator==(const denial&) const = default;
  };
  std::vector<lease_item> granted;
  std::vector<denial> denied;
  uint32_t lease_ttl_secs = 0;
  /// Clusters other workers wait for, each with a fair share (the limit
  /// over the workers that want slots there): a worker holding more than
  /// its share gives a slot back as its query ends, rather than keeping it
  /// for its own queue; at or under it, it keeps them. A share of 0: the
  /// fleet runs past the limit (after an outage), every freed slot goes
  /// back.
  struct share {
    std::string cluster;
    uint32_t slots = 0;
    bool operator==(const share&) const = default;
  };
  std::vector<share> contended;

  bool operator==(const acquire_answer&) const = default;
};

/// The answer to a call of verb v: acquire's whole; release and renew
/// carry only leaseTtlSecs (renew) and contended.
std::string encode(lease_verb v, const acquire_answer& a);
std::string encode(const acquire_answer& a);

/// A control plane's answer as the worker reads it; none when malformed.
std::optional<acquire_answer> decode_acquire_answer(std::string_view body);

/// The answer to a call of verb v, as a control-plane replica forwarding
/// the call reads the lease owner's: acquire's whole, the others'
/// leaseTtlSecs (renew) and contended; none when malformed.
std::optional<acquire_answer> decode_lease_answer(lease_verb v, std::string_view body);

/// A refused call's error body: {"error": message, "code": code}, the code
/// empty when there is none. Never throws.
struct lease_refusal {
  std::string code;
  std::string message;
};
lease_refusal decode_refusal(std::string_view body);

/// The `contended` list of any lease answer; none when malformed.
std::optional<std::vector<acquire_answer::share>> decode_contended(std::string_view body);

} // namespace qf::worker_api
