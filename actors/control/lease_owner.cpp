#include "actors/control/lease_owner.hpp"

#include "actors/control/database_url.hpp"

#include <caf/all.hpp>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <spdlog/spdlog.h>

namespace qf {

struct lease_owner_db {
  pqxx::connection conn;
};

lease_owner_state::lease_owner_state() = default;
lease_owner_state::~lease_owner_state() = default;

namespace {

using self_ptr = lease_owner_actor::stateful_pointer<lease_owner_state>;
using nlohmann::json;

/// The advisory lock whose holder owns the fleet's leases ("QFLEASE1").
constexpr int64_t owner_lock_key = 0x51464c4541534531;

/// What the record holds now, each holder's expiry counted from its last
/// confirmation (the owner touches every row each tick).
std::vector<lease_row> read_record(pqxx::work& tx) {
  auto rows = tx.exec(
    "SELECT holder, cluster_name, count(*)::bigint, max(ttl_secs)::bigint, "
    "(extract(epoch FROM (max(heartbeat_at) + make_interval(secs => max(ttl_secs)) - now())) "
    "* 1000)::bigint FROM cluster_capacity_leases GROUP BY holder, cluster_name");
  std::vector<lease_row> out;
  for (const auto& r : rows)
    out.push_back({r[0].as<std::string>(), r[1].as<std::string>(),
                   static_cast<uint32_t>(r[2].as<int64_t>()),
                   static_cast<uint32_t>(r[3].as<int64_t>()), r[4].as<int64_t>()});
  return out;
}

void tell_follow(self_ptr self, std::string url) {
  auto& st = self->state;
  // Never forward to ourselves: a row naming this replica is stale (it
  // lost the lock and nobody has taken it yet).
  if (url == st.cfg.advertise_url)
    url.clear();
  if (st.told == url)
    return;
  st.told = url;
  self->send(st.cfg.table, atom::follow::value, url);
}

/// The database session is gone, and the lock with it. An owner goes on
/// owning (a database outage must not stop admission; nobody who cannot
/// reach the database can take over either) until it is back and finds
/// another replica holding the lock.
void lost(self_ptr self, const std::string& why) {
  auto& st = self->state;
  if (st.db && st.owner)
    spdlog::error("lease owner: {}; still owning the fleet's leases until the database is "
                  "back (another replica may take them over meanwhile)",
                  why);
  st.db.reset();
  st.rewrite = st.owner;
  if (!st.owner)
    tell_follow(self, "");
}

void take_over(self_ptr self, pqxx::work& tx) {
  auto& st = self->state;
  lease_takeover t;
  auto previous = tx.exec("SELECT replica FROM capacity_lease_owner");
  if (!previous.empty())
    t.previous_owner = previous[0][0].as<std::string>();
  t.rows = read_record(tx);
  tx.exec_params("INSERT INTO capacity_lease_owner (id, replica, url, epoch) "
                 "VALUES (true, $1, $2, 1) ON CONFLICT (id) DO UPDATE SET "
                 "replica = EXCLUDED.replica, url = EXCLUDED.url, "
                 "epoch = capacity_lease_owner.epoch + 1, since = now()",
                 st.cfg.replica, st.cfg.advertise_url);
  tx.commit();
  st.written.clear();
  st.totals.clear();
  for (const auto& r : t.rows) {
    st.written[{r.holder, r.cluster}] = {r.count, r.ttl_secs};
    st.totals[r.cluster] += r.count;
  }
  st.owner = true;
  st.told.reset(); // losing it is news to the table

  spdlog::info("lease owner: this replica ({}) owns the fleet's leases now; the record holds {} "
               "holdings{}",
               st.cfg.advertise_url, t.rows.size(),
               t.previous_owner.empty() ? "" : ", last written by " + t.previous_owner);
  self->send(st.cfg.table, atom::leader::value, std::move(t));
}

void tick(self_ptr self) {
  auto& st = self->state;
  try {
    if (!st.db)
      st.db.reset(new lease_owner_db{pqxx::connection{with_timeouts(st.cfg.database_url, 10'000)}});
    pqxx::work tx{st.db->conn};
    if (st.owner && st.rewrite) {
      // Back after an outage: the lock again, or another replica's turn.
      if (!tx.exec_params1("SELECT pg_try_advisory_lock($1)", owner_lock_key)[0].as<bool>()) {
        spdlog::warn("lease owner: another replica owns the fleet's leases now");
        st.owner = false;
        st.rewrite = false;
        st.written.clear();
        st.totals.clear();
        auto row = tx.exec("SELECT url FROM capacity_lease_owner");
        tx.commit();
        st.told.reset();
        return tell_follow(self, row.empty() ? std::string{} : row[0][0].as<std::string>());
      }
      tx.exec("DELETE FROM cluster_capacity_leases"); // written again whole
      tx.exec_params("UPDATE capacity_lease_owner SET replica = $1, url = $2, "
                     "epoch = epoch + 1, since = now()",
                     st.cfg.replica, st.cfg.advertise_url);
      tx.commit();
      st.rewrite = false;
      st.written.clear();
      st.totals.clear();
      spdlog::info("lease owner: the database is back and this replica still owns the leases");
      return;
    }
    if (st.owner) {
      // The lock is still ours while the session lives; every row is
      // confirmed (its TTL counts from now).
      tx.exec("UPDATE cluster_capacity_leases SET heartbeat_at = now()");
      tx.commit();
      return;
    }
    if (tx.exec_params1("SELECT pg_try_advisory_lock($1)", owner_lock_key)[0].as<bool>())
      return take_over(self, tx);
    auto row = tx.exec("SELECT url FROM capacity_lease_owner");
    tx.commit();
    tell_follow(self, row.empty() ? std::string{} : row[0][0].as<std::string>());
  } catch (const std::exception& e) {
    lost(self, e.what());
  }
}

/// Writes the difference between `rows` and the record: the holdings that
/// changed go as a whole (their rows deleted and inserted again), in one
/// transaction with the clusters' totals.
void write(self_ptr self, const std::vector<lease_row>& rows) {
  auto& st = self->state;
  std::map<std::pair<std::string, std::string>, std::pair<uint32_t, uint32_t>> next;
  std::map<std::string, uint32_t> totals;
  for (const auto& r : rows) {
    if (r.count > 0)
      next[{r.holder, r.cluster}] = {r.count, r.ttl_secs};
    totals[r.cluster] += r.count;
  }
  json gone = json::array(), added = json::array(), counters = json::array();
  for (const auto& [key, v] : st.written)
    if (auto n = next.find(key); n == next.end() || n->second != v)
      gone.push_back({{"holder", key.first}, {"cluster", key.second}});
  for (const auto& [key, v] : next)
    if (auto w = st.written.find(key); w == st.written.end() || w->second != v)
      added.push_back({{"holder", key.first}, {"cluster", key.second}, {"count", v.first},
                       {"ttl", v.second}});
  for (const auto& [cluster, n] : st.totals)
    if (!totals.contains(cluster))
      totals[cluster] = 0;
  for (const auto& [cluster, n] : totals)
    if (auto t = st.totals.find(cluster); t == st.totals.end() || t->second != n)
      counters.push_back({{"cluster", cluster}, {"running", n}});
  if (gone.empty() && added.empty() && counters.empty())
    return;
  auto replace = json::error_handler_t::replace;
  pqxx::work tx{st.db->conn};
  if (!gone.empty())
    tx.exec_params("DELETE FROM cluster_capacity_leases l USING jsonb_to_recordset($1::jsonb) "
                   "AS r(holder text, cluster text) "
                   "WHERE l.holder = r.holder AND l.cluster_name = r.cluster",
                   gone.dump(-1, ' ', false, replace));
  if (!added.empty())
    tx.exec_params(
      "INSERT INTO cluster_capacity_leases (id, cluster_name, holder, ttl_secs) "
      "SELECT jsonb_build_array(r.holder, r.cluster, n)::text, r.cluster, r.holder, r.ttl "
      "FROM jsonb_to_recordset($1::jsonb) AS r(holder text, cluster text, count int, ttl int), "
      "generate_series(1, r.count) AS n",
      added.dump(-1, ' ', false, replace));
  if (!counters.empty())
    tx.exec_params("INSERT INTO cluster_capacity_counters (cluster_name, running) "
                   "SELECT r.cluster, r.running FROM jsonb_to_recordset($1::jsonb) "
                   "AS r(cluster text, running bigint) ON CONFLICT (cluster_name) "
                   "DO UPDATE SET running = EXCLUDED.running",
                   counters.dump(-1, ' ', false, replace));
  tx.commit();
  st.written = std::move(next);
  st.totals = std::move(totals);
}

} // namespace

lease_owner_actor::behavior_type
lease_owner(lease_owner_actor::stateful_pointer<lease_owner_state> self, lease_owner_settings cfg) {
  self->state.cfg = std::move(cfg);
  tick(self);
  self->delayed_send(self, self->state.cfg.every, atom::tick::value);
  return {
    [self](atom::put, const std::vector<lease_row>& rows) -> caf::result<atom::ok> {
      auto& st = self->state;
      if (!st.owner)
        return make_error(errc::lease_owner_unavailable,
                          "this replica does not own the leases");
      if (!st.db || st.rewrite) // sent again until the database is back
        return make_error(errc::storage_error, "the database is not reachable");
      try {
        write(self, rows);
        return atom::ok::value;
      } catch (const std::exception& e) {
        lost(self, e.what());
        return make_error(errc::storage_error, e.what());
      }
    },
    [self](atom::get) -> caf::result<std::vector<lease_row>> {
      auto& st = self->state;
      if (!st.db)
        return make_error(errc::storage_error, "the database is not reachable");
      try {
        pqxx::work tx{st.db->conn};
        auto rows = read_record(tx);
        tx.commit();
        return rows;
      } catch (const std::exception& e) {
        // Only an answer fails: a lost connection is the next tick's to
        // find, so an admin read never unsettles who owns the leases.
        return make_error(errc::storage_error, e.what());
      }
    },
    [self](atom::tick) {
      tick(self);
      self->delayed_send(self, self->state.cfg.every, atom::tick::value);
    },
  };
}

} // namespace qf
