#include "protocols/worker_api/compile.hpp"

namespace qf::worker_api {

compiled_snapshot compile(std::string_view worker_yaml, const snapshot_content& snapshot) {
  compiled_snapshot out;
  const auto& p = snapshot.policy;
  auto loaded = config::load_worker_config(worker_yaml, snapshot.fleet, p.auth_json,
                                           p.monitor_json);
  if (!loaded.config) {
    out.error = "the snapshot does not compile:";
    for (const auto& problem : loaded.problems)
      out.error += "\n  " + problem;
    return out;
  }
  // The policies are the control plane's, applied as they come.
  auto& api = loaded.config->queryflux.worker_api;
  api.history_endpoint = p.history_endpoint;
  api.history_redaction = p.redaction;
  loaded.config->translation.mode = p.translation_mode;
  loaded.config->translation.error_on_unsupported = p.error_on_unsupported;
  out.config = std::move(loaded.config);
  return out;
}

} // namespace qf::worker_api
