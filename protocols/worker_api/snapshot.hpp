// The config snapshot a control plane serves its workers (GET /worker/config,
// and /worker/peer-config between workers): what it carries, its canonical
// form and revision, and the checks a worker makes before it compiles one.
// Pure: no sockets, no clock.
#pragma once

#include "protocols/config/fleet.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace qf::worker_api {

/// The snapshot format this build writes and reads; a worker rejects any
/// other, keeping its active config (upgrade the control plane first).
constexpr int64_t snapshot_schema_version = 1;

/// A body larger than this is refused before it is parsed.
constexpr size_t max_snapshot_bytes = 32 * 1024 * 1024;

/// JSON nested deeper than this is refused (the parser is iterative, its
/// destructor is not).
constexpr int max_json_depth = 64;

/// What a snapshot carries besides the fleet: the settings a worker needs,
/// its history policy and the translation failure policy.
struct snapshot_policy {
  /// The auth section and the monitor section as JSON ("" for none).
  std::string auth_json;
  std::string monitor_json;
  std::optional<std::string> history_endpoint;
  config::redaction redaction = config::redaction::full;
  std::optional<std::string> translation_mode;
  bool error_on_unsupported = false;

  bool operator==(const snapshot_policy&) const = default;
};

/// Everything a worker compiles its live config from.
struct snapshot_content {
  config::fleet fleet;
  snapshot_policy policy;
};

/// A snapshot as served and kept: its revision and its canonical JSON.
struct encoded_snapshot {
  /// "sha256:" and the hex SHA-256 of `payload`.
  std::string revision;
  /// RFC 8785 canonical JSON, schemaVersion included: the same config
  /// gives the same bytes on every replica and after every restart.
  std::string payload;
};

/// True for "sha256:" and 64 lower-case hex digits.
bool is_revision(std::string_view r);

/// The policy a config hands its workers.
snapshot_policy policy_of(const config::gateway_config& cfg);

/// Builds a snapshot; nullopt, with `error` set, when a stored item is not
/// JSON that can be written canonically.
std::optional<encoded_snapshot> encode(const snapshot_content& c, std::string& error);

/// GET /worker/config's body: {"revision": ..., "snapshot": payload}.
std::string config_body(const encoded_snapshot& s);

/// /worker/peer-config's body: the same, and when the control plane last
/// confirmed it (milliseconds since the epoch), passed on unchanged.
std::string peer_body(const encoded_snapshot& s, int64_t confirmed_at_ms);

struct received_snapshot {
  encoded_snapshot encoded;
  snapshot_content content;
  /// Set in a peer's copy.
  std::optional<int64_t> confirmed_at_ms;
};

struct decode_outcome {
  std::optional<received_snapshot> snapshot;
  std::string error; // set when snapshot is not
  /// The revision the body says it has, when it says one: a worker that
  /// rejects a snapshot waits for the next revision instead of asking for
  /// the same one again.
  std::string claimed_revision;
};

/// Reads the body of /worker/config or /worker/peer-config and verifies it:
/// JSON, a known schemaVersion, a revision that is the hash of the payload
/// recomputed here, and the shape of every section. Never throws.
decode_outcome decode(std::string_view body);

} // namespace qf::worker_api
