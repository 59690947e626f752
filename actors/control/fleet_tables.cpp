#include "actors/control/fleet_tables.hpp"

#include "actors/control/database_url.hpp"

#include <pqxx/pqxx>

#include <map>

namespace qf::fleet_tables {

namespace {

using items = std::vector<std::pair<std::string, std::string>>;

void upsert_cluster(pqxx::work& tx, const std::string& name, const std::string& json) {
  tx.exec_params(
    "INSERT INTO cluster_configs (name, engine, enabled, max_running_queries, config) "
    "SELECT $1, j->>'engine', coalesce((j->>'enabled')::boolean, true), "
    "(j->>'maxRunningQueries')::integer, j FROM (SELECT $2::jsonb AS j) s "
    "ON CONFLICT (name) DO UPDATE SET engine = EXCLUDED.engine, enabled = EXCLUDED.enabled, "
    "max_running_queries = EXCLUDED.max_running_queries, config = EXCLUDED.config, "
    "updated_at = now()",
    name, json);
}

void upsert_group(pqxx::work& tx, const std::string& name, const std::string& json) {
  tx.exec_params(
    "INSERT INTO cluster_group_configs (name, enabled, members, max_running_queries, "
    "max_queued_queries, strategy, config) "
    "SELECT $1, coalesce((j->>'enabled')::boolean, true), "
    "coalesce(ARRAY(SELECT jsonb_array_elements_text(j->'members')), '{}'), "
    "coalesce((j->>'maxRunningQueries')::integer, 10), "
    "coalesce((j->>'maxQueuedQueries')::integer, 100), "
    "coalesce(j->'strategy', '{\"type\": \"roundRobin\"}'), j FROM (SELECT $2::jsonb AS j) s "
    "ON CONFLICT (name) DO UPDATE SET enabled = EXCLUDED.enabled, members = EXCLUDED.members, "
    "max_running_queries = EXCLUDED.max_running_queries, "
    "max_queued_queries = EXCLUDED.max_queued_queries, strategy = EXCLUDED.strategy, "
    "config = EXCLUDED.config, updated_at = now()",
    name, json);
}

/// Upserts what is new or changed in `after`, deletes what it lacks.
template <class Upsert>
void write_items(pqxx::work& tx, const char* table, const items& before, const items& after,
                 Upsert upsert) {
  std::map<std::string, const std::string*> old;
  for (const auto& [name, json] : before)
    old.emplace(name, &json);
  for (const auto& [name, json] : after) {
    auto i = old.find(name);
    if (i == old.end() || *i->second != json)
      upsert(tx, name, json);
    if (i != old.end())
      old.erase(i);
  }
  for (const auto& [name, json] : old)
    tx.exec_params(std::string{"DELETE FROM "} + table + " WHERE name = $1", name);
}

} // namespace

std::optional<config::fleet> load(const std::string& url) {
  pqxx::connection c{with_timeouts(url)};
  pqxx::work tx{c};
  auto f = read(tx);
  tx.commit();
  if (f.clusters.empty() && f.groups.empty())
    return std::nullopt;
  return f;
}

config::fleet read(pqxx::work& tx) {
  // One round trip: admin writes read the fleet each time.
  config::fleet f;
  auto rows = tx.exec(
    "SELECT 'c', name, config::text, id FROM cluster_configs "
    "UNION ALL SELECT 'g', name, config::text, id FROM cluster_group_configs "
    "UNION ALL SELECT 'r', NULL, definition::text, sort_order FROM routing_rules "
    "UNION ALL SELECT 'f', NULL, routing_fallback, 0 FROM routing_settings "
    "ORDER BY 1, 4");
  for (const auto& row : rows) {
    auto kind = row[0].as<std::string>();
    if (row[2].is_null())
      continue;
    auto text = row[2].as<std::string>();
    if (kind == "c")
      f.clusters.emplace_back(row[1].as<std::string>(), std::move(text));
    else if (kind == "g")
      f.groups.emplace_back(row[1].as<std::string>(), std::move(text));
    else if (kind == "r")
      f.routers.push_back(std::move(text));
    else
      f.routing_fallback = std::move(text);
  }
  return f;
}

void lock(pqxx::work& tx) {
  // Two nodes starting at once, or two admin writes: the second waits here.
  tx.exec("LOCK TABLE cluster_configs, cluster_group_configs, routing_rules, routing_settings "
          "IN EXCLUSIVE MODE");
}

int64_t write_changes(pqxx::work& tx, const config::fleet& before, const config::fleet& after) {
  write_items(tx, "cluster_configs", before.clusters, after.clusters, upsert_cluster);
  write_items(tx, "cluster_group_configs", before.groups, after.groups, upsert_group);
  if (before.routers != after.routers) {
    tx.exec("DELETE FROM routing_rules");
    for (size_t i = 0; i < after.routers.size(); ++i)
      tx.exec_params("INSERT INTO routing_rules (sort_order, definition) VALUES ($1, $2::jsonb)",
                     static_cast<int>(i), after.routers[i]);
  }
  if (before.routing_fallback != after.routing_fallback)
    tx.exec_params("INSERT INTO routing_settings (singleton, routing_fallback) VALUES (true, $1) "
                   "ON CONFLICT (singleton) DO UPDATE SET routing_fallback = "
                   "EXCLUDED.routing_fallback, updated_at = now()",
                   after.routing_fallback.empty() ? nullptr : after.routing_fallback.c_str());
  return tx.exec1("UPDATE config_revision SET revision = revision + 1, updated_at = now() "
                  "RETURNING revision")[0]
    .as<int64_t>();
}

bool seed(const std::string& url, const config::fleet& f) {
  pqxx::connection c{with_timeouts(url)};
  pqxx::work tx{c};
  lock(tx);
  if (tx.exec1("SELECT (SELECT count(*) FROM cluster_configs) + "
               "(SELECT count(*) FROM cluster_group_configs)")[0]
        .as<int64_t>()
      > 0)
    return false;
  write_changes(tx, config::fleet{}, f);
  tx.commit();
  return true;
}

int64_t revision(pqxx::connection& c) {
  pqxx::nontransaction tx{c};
  return tx.exec1("SELECT revision FROM config_revision")[0].as<int64_t>();
}

} // namespace qf::fleet_tables
