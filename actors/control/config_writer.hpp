// The CONFIG WRITER: every change to the fleet (clusters, groups, routers)
// goes through this one actor, so changes queue up rather than race. With
// PostgreSQL persistence the database is written first and the running
// node after, and a change the node does not take is undone in the
// database (the compensation pattern of the spec). It also re-reads the
// fleet that other replicas change, and keeps Trino Gateway's
// databaseCache semantics. Detached: libpqxx blocks.
#pragma once

#include "actors/core/interfaces.hpp"
#include "actors/core/messages.hpp"
#include "actors/node/node.hpp"
#include "protocols/config/fleet_edit.hpp"

#include <caf/fwd.hpp>

#include <string>

namespace qf {

/// One admin change.
struct fleet_request {
  enum class op {
    put,         // add or replace an item
    add,         // add an item; 409 when it exists
    erase,       // delete an item
    set_enabled, // (de)activate a cluster
    put_routing, // routers and fallback
    put_backend, // Trino Gateway's modify/update (add with `on`)
    erase_backend,
  };
  op what = op::put;
  config::fleet_item kind = config::fleet_item::cluster;
  std::string name;
  std::string body; // JSON, for put and put_routing
  bool on = false;  // for set_enabled; put_backend: add only
};

struct config_writer_settings {
  /// Empty: in-memory persistence, the running node is the only copy.
  std::string url;
  std::string config_text;
  std::shared_ptr<snapshot_cell> snapshot;
  snapshot_holder_actor holder;
  std::shared_ptr<metrics> stats;
  /// How often the database is asked for changes made elsewhere.
  std::chrono::milliseconds reload_every{0};
  /// databaseCache.expireAfterWrite when the cache is on.
  std::optional<std::chrono::milliseconds> expire_after;
};

/// Handlers:
/// - (update, fleet_request, admin_respond): answers 200 or 201 with the
///   item as shown (config::shown_item; for routing the routing document,
///   for a delete {"deleted": name}), or 400, 404, 409 (nothing changed),
///   500 (the node did not take it; undone), 503 (no database);
/// - (changed): the database says its config revision moved (NOTIFY from
///   any replica): re-read it now;
/// - (reload): INTERNAL, the background re-read.
caf::behavior config_writer(caf::event_based_actor* self, config_writer_settings settings);

} // namespace qf

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(qf::fleet_request)
