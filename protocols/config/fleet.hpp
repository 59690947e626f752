// The fleet part of a config: clusters, cluster groups, routers and the
// routing fallback. A control plane keeps it in PostgreSQL (seeded from the
// YAML file the first time only); the rest of the file stays node-local.
#pragma once

#include "protocols/config/loader.hpp"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qf::config {

/// Each entry is the JSON of its YAML mapping, as the file wrote it.
struct fleet {
  std::vector<std::pair<std::string, std::string>> clusters; // name, JSON
  std::vector<std::pair<std::string, std::string>> groups;   // name, JSON
  std::vector<std::string> routers;                          // JSON each
  std::string routing_fallback;

  bool operator==(const fleet&) const = default;
};

/// The fleet sections of config text; validate the text first.
fleet fleet_of(std::string_view yaml_text);

/// Loads yaml_text with its fleet sections replaced by f, validating the
/// whole as load_from_string does (problems name the same paths).
load_result load_with_fleet(std::string_view yaml_text, const fleet& f);

/// A worker's live config: its file (role: worker) with the sections of its
/// control plane's snapshot: the fleet, and `auth` and `monitor` as JSON
/// ("" for none; a monitor in the file wins, health checks being local
/// work). Validated as strictly as a control plane's file.
load_result load_worker_config(std::string_view worker_yaml, const fleet& f,
                               std::string_view auth_json, std::string_view monitor_json);

} // namespace qf::config
