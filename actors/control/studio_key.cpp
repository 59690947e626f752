#include "actors/control/studio_key.hpp"

#include "actors/control/database_url.hpp"

#include <pqxx/connection>
#include <pqxx/transaction>

namespace qf::studio_key {

std::string stored_or(const std::string& url, const std::string& candidate) {
  pqxx::connection c{with_timeouts(url)};
  pqxx::work tx{c};
  // Two replicas starting together: one insert wins, both read its key.
  tx.exec_params0("INSERT INTO studio_session_key (id, key) VALUES (1, $1) "
                  "ON CONFLICT (id) DO NOTHING",
                  candidate);
  auto key = tx.exec1("SELECT key FROM studio_session_key WHERE id = 1")[0].as<std::string>();
  tx.commit();
  return key;
}

} // namespace qf::studio_key
