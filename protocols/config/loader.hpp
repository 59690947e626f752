// Reads a YAML config into the model and checks it, reporting every problem
// at once with its path (e.g. `clusterGroups.bi.members[1]: unknown cluster "x"`).
#pragma once

#include "protocols/config/model.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qf::config {

struct load_result {
  std::optional<gateway_config> config; // set only when problems is empty
  std::vector<std::string> problems;
};

struct load_options {
  /// The fleet sections (and auth) were merged in from a control plane's
  /// snapshot: a worker's config holds them then.
  bool fleet_from_snapshot = false;
};

/// Parses YAML text. Never throws; environment variables are never expanded.
load_result load_from_string(std::string_view yaml_text, const load_options& opts = {});

/// Reads and parses a file; an unreadable file is reported as a problem.
load_result load_from_file(const std::string& path);

/// Parses "500ms", "30s", "1m", "2h", "1d"; nullopt when malformed.
std::optional<duration> parse_duration(std::string_view text);

} // namespace qf::config
