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

} // namespace qf::config
