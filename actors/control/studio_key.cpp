#include "actors/control/studio_key.hpp"

#include "actors/control/database_url.hpp"
#include "actors/control/revoked_sessions.hpp"

#include <caf/typed_event_based_actor.hpp>
#include <pqxx/pqxx>
#include <spdlog/spdlog.h>

#include <chrono>

namespace qf {

namespace studio_key {

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

std::map<std::string, int64_t> revoked(const std::string& url) {
  pqxx::connection c{with_timeouts(url)};
  pqxx::work tx{c};
  tx.exec0("DELETE FROM studio_revoked_sessions WHERE expires_at <= now()");
  std::map<std::string, int64_t> out;
  for (const auto& row : tx.exec("SELECT id, extract(epoch FROM expires_at)::bigint "
                                 "FROM studio_revoked_sessions"))
    out[row[0].as<std::string>()] = row[1].as<int64_t>();
  tx.commit();
  return out;
}

} // namespace studio_key

namespace {

int64_t now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

} // namespace

studio_revocations_actor::behavior_type
studio_revocations(studio_revocations_actor::pointer self, std::string url,
                   std::shared_ptr<revoked_sessions> into, caf::timespan every) {
  self->send(self, atom::tick::value);
  return {
    [self, url](atom::put, const std::string& id, int64_t expires_at) {
      try {
        pqxx::connection c{with_timeouts(url)};
        pqxx::work tx{c};
        tx.exec_params0("INSERT INTO studio_revoked_sessions (id, expires_at) "
                        "VALUES ($1, to_timestamp($2)) ON CONFLICT (id) DO NOTHING",
                        id, expires_at);
        tx.commit();
      } catch (const std::exception& e) {
        // This replica refuses the session already; the others would not.
        spdlog::warn("studio: cannot store a logout for the other replicas: {}", e.what());
      }
    },
    [self, url, into, every](atom::tick) {
      try {
        into->merge(studio_key::revoked(url), now_s());
      } catch (const std::exception& e) {
        spdlog::debug("studio: cannot read the replicas' logouts: {}", e.what());
      }
      self->delayed_send(self, every, atom::tick::value);
    },
  };
}

} // namespace qf
