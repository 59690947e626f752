// What a worker tells its control plane when it registers and at every
// heartbeat (POST /worker/register, /worker/heartbeat), and the downward
// API's labels file it may merge into its labels. Pure: no sockets, no clock.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qf::worker_api {

/// A heartbeat body larger than this is refused (413).
constexpr size_t max_report_bytes = 64 * 1024;

struct worker_report {
  std::string name;
  std::map<std::string, std::string> labels;
  std::string version;
  /// Random per process: tells a restarted worker from the one before.
  std::string incarnation;
  /// "" until there is one.
  std::string downloaded_revision;
  std::string active_revision;
  /// The last sync or activation error, "" when the last one went well.
  std::string last_error;
  std::string coordination_mode = "controlPlane"; // or local
  std::string config_source;                      // controlPlane, peer or ""
  std::string status = "active";                  // or draining
  uint32_t heartbeat_interval_secs = 10;

  bool operator==(const worker_report&) const = default;
};

std::string encode(const worker_report& r);

struct report_outcome {
  std::optional<worker_report> report;
  std::string error; // set when report is not
};

/// Reads and checks a report: a JSON object of bounded size and depth, a
/// valid name, string labels, known enum values. Never throws.
report_outcome decode_report(std::string_view body);

/// True for 1 to 253 letters, digits, '-', '_' and '.' (a pod's name).
bool valid_worker_name(std::string_view name);

struct labels_outcome {
  std::map<std::string, std::string> labels;
  std::vector<std::string> problems; // "line N: ..."
};

/// The downward API's labels file: one key="value" per line, the value
/// quoted as Go's %q writes it.
labels_outcome parse_labels_file(std::string_view text);

} // namespace qf::worker_api
