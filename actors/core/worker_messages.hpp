// What the worker-mode actors exchange: snapshots as served, a worker's
// config origin, registry entries and the link's view of its control
// plane. In-process only, so marked unsafe (never serialized) like the
// rest of messages.hpp.
#pragma once

#include "protocols/worker_api/lease_call.hpp"
#include "protocols/worker_api/sweep_lock.hpp"
#include "protocols/worker_api/snapshot.hpp"
#include "protocols/worker_api/worker_report.hpp"

#include <caf/allowed_unsafe_message_type.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace qf {

/// A fleet to run: the whole config and the fleet part as stored.
struct fleet_update {
  std::shared_ptr<const config::gateway_config> config;
  config::fleet fleet;
};

/// A snapshot as a control plane serves it: serialized once per revision,
/// its bytes shared by every answer.
struct served_snapshot {
  std::string revision;
  /// GET /worker/config's body.
  std::shared_ptr<const std::string> body;
};

/// A long poll's answer: a snapshot whose revision is not the one the
/// worker has, or none when the hold ran out first (304).
struct snapshot_wait_result {
  std::optional<served_snapshot> snapshot;
};

/// Where a node's active config came from.
enum class config_source : uint8_t { none, file, control_plane, peer };

std::string_view to_string(config_source s);

/// A worker's snapshot as activated: kept to serve peers and to report.
struct snapshot_origin {
  std::shared_ptr<const worker_api::encoded_snapshot> encoded;
  config_source source = config_source::control_plane;
  /// When the control plane last confirmed this revision (ms since the
  /// epoch); a peer's copy keeps the time it came with.
  int64_t confirmed_at_ms = 0;
};

/// The snapshot holder's view: what is active and how fresh it is.
struct holder_status {
  std::string revision; // "" before the first snapshot
  config_source source = config_source::none;
  int64_t confirmed_at_ms = 0;
  /// Copied from a peer and not confirmed by the control plane since.
  bool stale = false;
  std::shared_ptr<const worker_api::encoded_snapshot> encoded;
};

/// One worker as the control plane's registry knows it.
struct worker_entry {
  worker_api::worker_report report;
  int64_t registered_at_ms = 0;
  int64_t last_seen_at_ms = 0;
  std::string status = "active"; // active, draining, gone
  /// Registered (not only heartbeated) here since the last batch: its
  /// registration time is written.
  bool enrolled = false;
  /// Set while two or more live workers use coordination.mode: local: each
  /// applies the limits alone, so they multiply.
  std::string coordination_warning;
};

/// The worker's link to its control plane, for /worker/status.
struct link_status {
  std::string downloaded_revision;
  std::string last_error;
  int64_t last_sync_ms = 0; // the control plane's last answer
  uint32_t consecutive_failures = 0;
  std::string control_plane_url;
  /// Why the last peer bootstrap attempt found no usable copy.
  std::string peer_error;
};

/// What one worker holds of the fleet's slots, as the lease table knows.
struct lease_holder_view {
  std::string worker;
  std::string incarnation;
  std::map<std::string, uint32_t> held; // by cluster
  /// Until the leases expire unless renewed (ms from now).
  int64_t expires_in_ms = 0;
};

/// What the lease owner counts for one holder on one cluster: a row of the
/// shared record in PostgreSQL (cluster_capacity_leases, one row a slot).
struct lease_row {
  std::string holder;
  std::string cluster;
  uint32_t count = 0;
  uint32_t ttl_secs = 30;
  /// Read back: how long the holder's leases live unless renewed (ms).
  int64_t expires_in_ms = 0;
  bool operator==(const lease_row&) const = default;
};

/// A replica became the lease owner: what the record held (the leases
/// other replicas and workers had when the last owner wrote) and who that
/// owner was.
struct lease_takeover {
  std::vector<lease_row> rows;
  std::string previous_owner;
};

/// The capacity actor's view, for /worker/status.
struct capacity_status {
  std::string mode;            // controlPlane or local
  std::string on_unavailable;  // failClosed or localLimits
  /// connected, degraded (localLimits: own limits only) or closed
  /// (failClosed: leases expired, new queries wait).
  std::string state;
  std::map<std::string, uint32_t> held; // by cluster
  /// Lease calls sent (repeats included), and those without a usable answer.
  uint64_t calls = 0;
  uint64_t failures = 0;
  std::string last_error;
};

/// Engine reconciliation on one node, for /worker/status and tests.
struct reconcile_status {
  /// This node holds the engine-reconcile lock (or could not ask for it
  /// and counts on its own): its health checks ask the engines.
  bool counting = true;
  bool holds_lock = false;
  /// Who held the lock at the last answer ("" before one).
  std::string lock_holder;
  uint64_t failures = 0;
  std::string last_error;
};

/// A worker's history uplink, for /worker/status (historyUplink).
struct uplink_status {
  /// Records spooled now, delivered, and dropped (spool full, or refused).
  uint64_t queued = 0;
  uint64_t sent = 0;
  uint64_t dropped = 0;
  /// Of `sent`, those the control plane already had (a retried batch).
  uint64_t duplicates = 0;
  /// Where records go now ("" until the first snapshot says).
  std::string destination;
  std::string last_error;
};

} // namespace qf

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(qf::uplink_status)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(qf::reconcile_status)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(qf::fleet_update)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(qf::served_snapshot)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(qf::snapshot_wait_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(qf::snapshot_origin)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(qf::holder_status)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(qf::worker_entry)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<qf::worker_entry>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(qf::link_status)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(qf::worker_api::lease_call)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(qf::worker_api::acquire_answer)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(qf::worker_api::sweep_verb)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(qf::worker_api::sweep_call)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(qf::worker_api::sweep_answer)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(qf::lease_holder_view)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<qf::lease_holder_view>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(qf::capacity_status)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(qf::lease_row)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<qf::lease_row>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(qf::lease_takeover)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(qf::worker_api::snapshot_content)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(qf::worker_api::worker_report)
