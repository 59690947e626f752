// CONNECTION actors: detached, each owns one blocking engine connection.
// HEALTH CHECKER actors: detached, open the cluster's database and run its
// health query, so a hung engine blocks only its own thread.
#pragma once

#include "actors/core/messages.hpp"
#include "protocols/config/model.hpp"

#include <caf/stateful_actor.hpp>

#include <memory>

namespace qf {

struct connection_state {
  static inline const char* name = "connection";
  std::shared_ptr<engines::connection> conn;
  std::unique_ptr<engines::cursor> cursor;
};

/// Handlers:
/// - (execute, statement_request) -> statement_result;
/// - (fetch, uint32_t max_rows) -> result_batch;
/// - (close): drops the open cursor.
caf::behavior connection_actor(caf::stateful_actor<connection_state>* self,
                               std::shared_ptr<engines::connection> conn);

/// The database a successful health check opened (or kept open).
struct health_ok {
  std::shared_ptr<engines::database> db;
  /// What the cluster itself runs and queues, when read and it says.
  std::optional<engines::engine_load> load;
};

struct health_checker_state {
  static inline const char* name = "health-checker";
  config::cluster cfg;
  config::health_probe probe;
  std::shared_ptr<engines::database> db;
  std::unique_ptr<engines::connection> conn;
};

/// Handler: (check) -> health_ok, or an error saying why the check failed.
caf::behavior health_checker(caf::stateful_actor<health_checker_state>* self,
                             config::cluster cfg, config::health_probe probe);

} // namespace qf

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(qf::health_ok)
