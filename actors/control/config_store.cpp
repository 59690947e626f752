#include "actors/control/config_store.hpp"

#include "actors/control/database_url.hpp"

#include <pqxx/pqxx>

namespace qf::config_store {

std::optional<config::fleet> load(const std::string& url) {
  pqxx::connection c{with_timeouts(url)};
  pqxx::work tx{c};
  config::fleet f;
  for (const auto& row : tx.exec("SELECT name, config::text FROM cluster_configs ORDER BY id"))
    f.clusters.emplace_back(row[0].as<std::string>(), row[1].as<std::string>());
  for (const auto& row : tx.exec("SELECT name, config::text FROM cluster_group_configs ORDER BY id"))
    f.groups.emplace_back(row[0].as<std::string>(), row[1].as<std::string>());
  if (f.clusters.empty() && f.groups.empty())
    return std::nullopt;
  for (const auto& row : tx.exec("SELECT definition::text FROM routing_rules ORDER BY sort_order"))
    f.routers.push_back(row[0].as<std::string>());
  auto fallback = tx.exec("SELECT routing_fallback FROM routing_settings");
  if (!fallback.empty() && !fallback[0][0].is_null())
    f.routing_fallback = fallback[0][0].as<std::string>();
  tx.commit();
  return f;
}

bool seed(const std::string& url, const config::fleet& f) {
  pqxx::connection c{with_timeouts(url)};
  pqxx::work tx{c};
  // Two nodes starting at once: the second waits here, then finds rows.
  tx.exec("LOCK TABLE cluster_configs, cluster_group_configs IN EXCLUSIVE MODE");
  if (tx.exec1("SELECT (SELECT count(*) FROM cluster_configs) + "
               "(SELECT count(*) FROM cluster_group_configs)")[0]
        .as<int64_t>()
      > 0)
    return false;
  for (const auto& [name, json] : f.clusters)
    tx.exec_params("INSERT INTO cluster_configs (name, engine, enabled, max_running_queries, config) "
                   "SELECT $1, j->>'engine', coalesce((j->>'enabled')::boolean, true), "
                   "(j->>'maxRunningQueries')::integer, j FROM (SELECT $2::jsonb AS j) s",
                   name, json);
  for (const auto& [name, json] : f.groups)
    tx.exec_params(
      "INSERT INTO cluster_group_configs (name, enabled, members, max_running_queries, "
      "max_queued_queries, strategy, config) "
      "SELECT $1, coalesce((j->>'enabled')::boolean, true), "
      "coalesce(ARRAY(SELECT jsonb_array_elements_text(j->'members')), '{}'), "
      "coalesce((j->>'maxRunningQueries')::integer, 10), "
      "coalesce((j->>'maxQueuedQueries')::integer, 100), "
      "coalesce(j->'strategy', '{\"type\": \"roundRobin\"}'), j FROM (SELECT $2::jsonb AS j) s",
      name, json);
  for (size_t i = 0; i < f.routers.size(); ++i)
    tx.exec_params("INSERT INTO routing_rules (sort_order, definition) VALUES ($1, $2::jsonb)",
                   static_cast<int>(i), f.routers[i]);
  tx.exec_params("INSERT INTO routing_settings (singleton, routing_fallback) VALUES (true, $1) "
                 "ON CONFLICT (singleton) DO UPDATE SET routing_fallback = EXCLUDED.routing_fallback",
                 f.routing_fallback.empty() ? nullptr : f.routing_fallback.c_str());
  tx.exec("UPDATE config_revision SET revision = revision + 1, updated_at = now()");
  tx.commit();
  return true;
}

} // namespace qf::config_store
