// A worker's live config from its file and a verified snapshot, compiled as
// strictly as a control plane's file: one invalid cluster, engine, router or
// regex rejects the whole snapshot.
#pragma once

#include "protocols/worker_api/snapshot.hpp"

namespace qf::worker_api {

struct compiled_snapshot {
  std::optional<config::gateway_config> config;
  /// Every problem, one per line, when config is not set.
  std::string error;
};

compiled_snapshot compile(std::string_view worker_yaml, const snapshot_content& snapshot);

} // namespace qf::worker_api
