// The HISTORY SPOOL on a worker: workers keep no durable history, so each
// finished query's record goes upstream, to the control plane (POST
// /worker/query-records) or to the history endpoint the snapshot (or the
// worker's own history.endpoint) names. Queries push their records into a
// bounded spool without a message or a wait (as into the history ring);
// when it is full the oldest give way, counted. This actor takes batches
// of up to 200, redacts them by the snapshot's policy, and sends one at a
// time: network errors, 429 and 5xx (and a control plane that does not
// read this batch format yet) are retried with exponential backoff and
// jitter, honouring Retry-After; any other 4xx drops the batch, counted,
// so that one bad record cannot block the spool. The control plane's
// shared secret goes to the control plane only, never to an endpoint of
// another kind. Nothing is sent before the first snapshot: until then the
// redaction policy is not known.
#pragma once

#include "actors/control/history_outbox.hpp"
#include "actors/core/interfaces.hpp"
#include "protocols/config/model.hpp"

#include <caf/typed_event_based_actor.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <random>

namespace qf {

class metrics;
class snapshot_cell;

struct history_spool_settings {
  std::shared_ptr<history_outbox> spool;
  /// The active snapshot: its workerApi.history (endpoint, redaction).
  std::shared_ptr<snapshot_cell> cell;
  /// The worker's history.endpoint: overrides the snapshot's.
  std::optional<std::string> endpoint;
  config::control_plane_link control_plane;
  std::string worker_name;
  std::shared_ptr<http_transport> transport;
  std::shared_ptr<metrics> stats;
  /// How often an idle spool is looked at.
  caf::timespan interval = std::chrono::milliseconds(200);
  /// Backoff after a failed batch: doubling from the first to the last.
  caf::timespan backoff_first = std::chrono::milliseconds(500);
  caf::timespan backoff_last = std::chrono::seconds(30);
  std::chrono::milliseconds request_timeout{10'000};
};

struct history_spool_state {
  static inline const char* name = "history-spool";

  std::shared_ptr<const history_spool_settings> cfg;
  /// The batch out now (redacted as it left the spool), by sequence number.
  std::vector<query_record> batch;
  uint64_t seq = 0;
  bool in_flight = false;
  /// Failed batches in a row, and when the next may go.
  uint32_t failures = 0;
  caf::actor_clock::time_point resume_at{};
  /// Only the latest planned tick counts.
  uint64_t tick_generation = 0;
  uplink_status status;
  /// Shutdown's final flush, answered once nothing is left to send (or
  /// the destination refuses).
  std::optional<caf::typed_response_promise<uint64_t>> flushing;
  std::minstd_rand jitter{std::random_device{}()};
};

history_spool_actor::behavior_type
history_spool(history_spool_actor::stateful_pointer<history_spool_state> self,
              std::shared_ptr<const history_spool_settings> cfg);

} // namespace qf
