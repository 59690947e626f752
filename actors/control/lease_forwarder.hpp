// The LEASE FORWARDER: on a control-plane replica that does not own the
// fleet's leases (actors/control/lease_owner.hpp), a worker's lease call
// goes on to the replica that does, with the fleet's secret, and its
// answer (or its refusal, code and all) comes back as if this replica had
// given it; sweep-lock calls the same way. Workers reach any replica
// behind one Service and never learn which one owns the leases.
#pragma once

#include "actors/core/interfaces.hpp"

#include <caf/typed_event_based_actor.hpp>

#include <map>

namespace qf {

struct lease_forwarder_settings {
  std::shared_ptr<http_transport> transport;
  std::string shared_secret;
};

struct lease_forwarder_state {
  static inline const char* name = "lease_forwarder";
  struct pending {
    worker_api::lease_verb verb;
    caf::typed_response_promise<worker_api::acquire_answer> promise;
  };
  lease_forwarder_settings cfg;
  std::string owner_url;
  uint64_t next_id = 1;
  std::map<uint64_t, pending> calls;
  struct pending_sweep {
    worker_api::sweep_verb verb;
    caf::typed_response_promise<worker_api::sweep_answer> promise;
  };
  std::map<uint64_t, pending_sweep> sweeps;
};

/// A sweep-lock call over HTTP to the control plane (or replica) at
/// base_url: GET for counts, POST with its body for the others.
http_call sweep_lock_call(const std::string& base_url, const std::string& shared_secret,
                          worker_api::sweep_verb verb, const worker_api::sweep_call& c);

lease_forwarder_actor::behavior_type
lease_forwarder(lease_forwarder_actor::stateful_pointer<lease_forwarder_state> self,
                lease_forwarder_settings cfg);

} // namespace qf
