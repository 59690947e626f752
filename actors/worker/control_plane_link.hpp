// The CONTROL PLANE LINK: a worker's one way to its config. It long-polls
// the control plane with the last revision it downloaded, verifies each new
// snapshot (schemaVersion, revision recomputed from the body), compiles it
// strictly on the worker's own file and only then has the snapshot holder
// swap it in. It heartbeats every heartbeatIntervalSecs, backs off with full
// jitter up to 60 s while the control plane is away (the last config keeps
// serving), and with peerBootstrap copies a running worker's config when it
// has none after afterSecs.
#pragma once

#include "actors/core/interfaces.hpp"
#include "protocols/config/model.hpp"

#include <caf/typed_event_based_actor.hpp>

#include <deque>
#include <random>

namespace qf {

class metrics;

struct control_plane_link_settings {
  config::control_plane_link control_plane;
  std::string worker_name;
  std::map<std::string, std::string> labels;
  std::string version;
  /// Random per process.
  std::string incarnation;
  config::coordination coordination;
  /// The worker's config file: each snapshot compiles on it.
  std::string worker_yaml;
  /// Whether the workers' ops ports speak https (peer copies).
  bool peer_tls = false;
  std::shared_ptr<http_transport> transport;
  snapshot_holder_actor holder;
  std::shared_ptr<metrics> stats;
};

struct control_plane_link_state {
  static inline const char* name = "control_plane_link";
  std::shared_ptr<const control_plane_link_settings> cfg;
  /// The last revision downloaded, taken or not: the next long poll's
  /// `since`, so that a rejected snapshot is not fetched again and again.
  std::string downloaded;
  std::string active;
  /// The revision the holder is activating (the last one handed to it; it
  /// takes them in order), "" when none is under way.
  std::string pending;
  /// Revisions active a moment ago: coming back to one is held to the
  /// poll loop's rate.
  std::deque<std::string> recently_left;
  config_source source = config_source::none;
  std::string last_error;
  int64_t last_sync_ms = 0;
  uint32_t failures = 0;
  uint64_t generation = 0;
  bool polling = false;
  /// Ask with a plain GET (answered at once) rather than a long poll: at
  /// the first contact and after a failure, so that a copied config is
  /// confirmed as soon as the control plane answers.
  bool fresh_contact = true;
  bool registered = false;
  // Heartbeats: one on its way at a time, one timer at a time.
  bool beating = false;
  bool beat_again = false;
  bool beat_timer = false;
  bool beat_says_draining = false;
  /// Shutdown: heartbeats say draining; drain's callers hear of the first.
  bool draining = false;
  std::vector<caf::typed_response_promise<atom::ok>> drain_waiters;
  /// A token bucket (burst 2, one a second) under the poll loop, so that
  /// a control plane answering at once, whatever it answers, is never
  /// polled in a tight loop.
  double tokens = 2;
  caf::actor_clock::time_point refilled{};
  // Peer bootstrap.
  bool bootstrapping = false;
  std::vector<std::string> peers;
  std::string peer_error;
  std::mt19937 rng{std::random_device{}()};
};

control_plane_link_actor::behavior_type
control_plane_link(control_plane_link_actor::stateful_pointer<control_plane_link_state> self,
                   std::shared_ptr<const control_plane_link_settings> settings);

/// The delay before retry `failures` (1, 2, ...): uniform in [0, min(60 s,
/// 1 s * 2^failures)), AWS's "full jitter".
caf::timespan backoff_delay(uint32_t failures, std::mt19937& rng);

} // namespace qf
