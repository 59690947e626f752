// The fleet part of the config: clusters, cluster groups, routers, and the
// references between them.
#include "protocols/config/loader_sections.hpp"

#include <re2/re2.h>

#include <set>

namespace qf::config::detail {

namespace {

void read_cluster_auth(walker& w, const YAML::Node& n, const std::string& path,
                       cluster_auth& out) {
  if (!w.expect_map(n, path))
    return;
  w.check_keys(n, path, {"type", "username", "password", "token"});
  w.read(n, path, "type", out.type);
  w.read(n, path, "username", out.username);
  w.read(n, path, "password", out.password);
  w.read(n, path, "token", out.token);
  if (out.type == "basic" && out.username.empty())
    w.report(path + ".username", "missing for basic auth");
  else if (out.type == "bearer" && out.token.empty())
    w.report(path + ".token", "missing for bearer auth");
  else if (out.type != "basic" && out.type != "bearer")
    w.report(path + ".type", "expected basic or bearer");
}

} // namespace

void read_cluster(walker& w, const std::string& name, const YAML::Node& n,
                  const std::string& path, const monitor& health, cluster& out) {
  out.name = name;
  if (!w.expect_map(n, path))
    return;
  w.check_keys(n, path,
               {"engine", "databasePath", "enabled", "maxRunningQueries",
                "initSql", "healthCheckQuery", "endpoint", "host", "port",
                "database", "user", "password", "poolSize", "auth", "queryAuth", "tls",
                "externalAccess", "maxPinnedSessions", "pipelineDepth", "externalUrl",
                "monitor"});
  std::string engine;
  w.read(n, path, "engine", engine);
  if (engine == "duckDb")
    out.engine = engine_kind::duck_db;
  else if (engine == "sqlite")
    out.engine = engine_kind::sqlite;
  else if (engine == "postgres")
    out.engine = engine_kind::postgres;
  else if (engine == "mysql")
    out.engine = engine_kind::mysql;
  else if (engine == "trino")
    out.engine = engine_kind::trino;
  else if (engine.empty())
    w.report(path + ".engine", "missing (duckDb, sqlite, postgres, mysql or trino)");
  else
    w.report(path + ".engine", "unknown engine \"" + engine
                                 + "\" (duckDb, sqlite, postgres, mysql or trino)");
  w.read(n, path, "endpoint", out.endpoint);
  w.read(n, path, "externalUrl", out.external_url);
  if (!out.external_url.empty() && out.external_url.rfind("http://", 0) != 0
      && out.external_url.rfind("https://", 0) != 0)
    w.report(path + ".externalUrl", "expected an http:// or https:// URL");
  w.read(n, path, "host", out.host);
  w.read_port(n, path, out.port);
  w.read(n, path, "database", out.database);
  w.read(n, path, "user", out.user);
  w.read(n, path, "password", out.password);
  uint32_t pool = 0;
  if (w.read_uint(n, path, "poolSize", pool, 10'000)) {
    if (pool == 0)
      w.report(path + ".poolSize", "must be at least 1");
    out.pool_size = pool;
  }
  if (out.engine == engine_kind::postgres) {
    if (out.endpoint.empty() && out.host.empty())
      w.report(path + ".endpoint", "missing: a postgres:// URL or host");
    if (!out.endpoint.empty() && out.endpoint.rfind("postgres://", 0) != 0
        && out.endpoint.rfind("postgresql://", 0) != 0)
      w.report(path + ".endpoint", "expected a postgres:// URL");
  }
  if (out.engine == engine_kind::mysql) {
    if (out.endpoint.empty() && out.host.empty())
      w.report(path + ".endpoint", "missing: a mysql:// URL or host");
    if (!out.endpoint.empty() && out.endpoint.rfind("mysql://", 0) != 0)
      w.report(path + ".endpoint", "expected a mysql:// URL");
  }
  if (out.engine == engine_kind::trino) {
    if (out.endpoint.rfind("http://", 0) != 0 && out.endpoint.rfind("https://", 0) != 0)
      w.report(path + ".endpoint", out.endpoint.empty()
                                     ? "missing: the cluster's http:// or https:// URL"
                                     : "expected an http:// or https:// URL");
  }
  if (auto t = n["tls"]; t && !t.IsNull() && w.expect_map(t, path + ".tls")) {
    w.check_keys(t, path + ".tls", {"caFile", "insecureSkipVerify"});
    w.read(t, path + ".tls", "caFile", out.tls_ca_file);
    w.read(t, path + ".tls", "insecureSkipVerify", out.tls_insecure_skip_verify);
  }
  if (auto a = n["auth"]; a && !a.IsNull())
    read_cluster_auth(w, a, path + ".auth", out.auth);
  if (auto q = n["queryAuth"]; q && !q.IsNull() && w.expect_map(q, path + ".queryAuth")) {
    w.check_keys(q, path + ".queryAuth", {"type"});
    w.read(q, path + ".queryAuth", "type", out.query_auth);
    if (out.query_auth != "serviceAccount" && out.query_auth != "impersonate")
      w.report(path + ".queryAuth.type", "expected serviceAccount or impersonate (passthrough "
                                         "and tokenExchange are not built yet)");
    else if (out.engine != engine_kind::trino && out.query_auth != "serviceAccount")
      w.report(path + ".queryAuth.type", "only trino clusters impersonate");
  }
  w.read(n, path, "databasePath", out.database_path);
  w.read(n, path, "enabled", out.enabled);
  uint32_t max = 0;
  if (w.read_uint(n, path, "maxRunningQueries", max, 1'000'000)) {
    if (max == 0)
      w.report(path + ".maxRunningQueries", "must be at least 1");
    out.max_running_queries = max;
  }
  if (auto init = n["initSql"]; init && init.IsScalar())
    out.init_sql.push_back(init.Scalar());
  else
    w.read_string_list(n, path, "initSql", out.init_sql);
  w.read(n, path, "healthCheckQuery", out.health_check_query);
  w.read(n, path, "externalAccess", out.external_access);
  if (w.read_uint(n, path, "maxPinnedSessions", out.max_pinned_sessions, 100'000)
      && out.engine != engine_kind::postgres && out.engine != engine_kind::mysql)
    w.report(path + ".maxPinnedSessions", "only postgres and mysql clusters keep connections "
                                          "for their clients");
  if (w.read_uint(n, path, "pipelineDepth", out.pipeline_depth, 64)) {
    if (out.pipeline_depth == 0)
      w.report(path + ".pipelineDepth", "must be at least 1 (1: no pipelining)");
    else if (out.engine != engine_kind::postgres)
      w.report(path + ".pipelineDepth", "only postgres clusters pipeline statements");
  }
  if (out.external_access && out.engine != engine_kind::duck_db
      && out.engine != engine_kind::sqlite)
    w.report(path + ".externalAccess", "only duckDb and sqlite clusters run SQL in the gateway");
  if (auto m = n["monitor"]; m && !m.IsNull())
    read_cluster_monitor(w, m, path + ".monitor", health.probe, out);
}

void read_group(walker& w, const std::string& name, const YAML::Node& n,
                const std::string& path, cluster_group& out) {
  out.name = name;
  if (!w.expect_map(n, path))
    return;
  w.check_keys(n, path,
               {"enabled", "members", "maxRunningQueries", "maxQueuedQueries",
                "capacityWaitTimeoutSecs", "strategy"});
  w.read(n, path, "enabled", out.enabled);
  if (!n["members"])
    w.report(path + ".members", "missing");
  w.read_string_list(n, path, "members", out.members);
  if (n["members"] && n["members"].IsSequence() && out.members.empty())
    w.report(path + ".members", "needs at least one cluster");
  if (w.read_uint(n, path, "maxRunningQueries", out.max_running_queries,
                  1'000'000)
      && out.max_running_queries == 0)
    w.report(path + ".maxRunningQueries", "must be at least 1");
  w.read_uint(n, path, "maxQueuedQueries", out.max_queued_queries, 10'000'000);
  w.read_seconds(n, path, "capacityWaitTimeoutSecs",
                 out.capacity_wait_timeout);
  if (auto s = n["strategy"]; s && !s.IsNull()) {
    auto sp = path + ".strategy";
    if (w.expect_map(s, sp)) {
      w.check_keys(s, sp, {"type"});
      std::string type;
      w.read(s, sp, "type", type);
      bool found = false;
      for (auto k : {strategy_kind::round_robin, strategy_kind::least_loaded,
                     strategy_kind::random, strategy_kind::failover,
                     strategy_kind::query_count_based})
        if (to_string(k) == type) {
          out.strategy = k;
          found = true;
        }
      if (!found)
        w.report(sp + ".type", "unknown strategy \"" + type
                                 + "\" (roundRobin, leastLoaded, random, "
                                   "failover, queryCountBased)");
    }
  }
}

namespace {

void read_regex_rules(walker& w, const YAML::Node& n, const std::string& path,
                      router& out) {
  auto rules = n["rules"];
  if (!rules || !rules.IsSequence()) {
    w.report(path + ".rules", "expected a list of rules");
    return;
  }
  for (size_t i = 0; i < rules.size(); ++i) {
    auto rp = walker::index(path + ".rules", i);
    auto r = rules[i];
    if (!w.expect_map(r, rp))
      continue;
    w.check_keys(r, rp, {"regex", "targetGroup", "action", "error"});
    regex_rule rule;
    w.read(r, rp, "regex", rule.regex);
    w.read(r, rp, "targetGroup", rule.target_group);
    w.read(r, rp, "error", rule.error);
    std::string action = "route";
    w.read(r, rp, "action", action);
    if (action == "deny")
      rule.deny = true;
    else if (action != "route")
      w.report(rp + ".action", "expected route or deny");
    if (rule.regex.empty()) {
      w.report(rp + ".regex", "missing");
    } else {
      RE2 re{rule.regex, RE2::Quiet};
      if (!re.ok())
        w.report(rp + ".regex", "invalid regex: " + re.error());
    }
    if (!rule.deny && rule.target_group.empty())
      w.report(rp + ".targetGroup", "missing (or set action: deny)");
    if (rule.deny && rule.error.empty())
      rule.error = "Query denied by routing rule";
    out.regex_rules.push_back(std::move(rule));
  }
}

void read_tag_rules(walker& w, const YAML::Node& n, const std::string& path,
                    router& out) {
  auto rules = n["rules"];
  if (!rules || !rules.IsSequence()) {
    w.report(path + ".rules", "expected a list of rules");
    return;
  }
  for (size_t i = 0; i < rules.size(); ++i) {
    auto rp = walker::index(path + ".rules", i);
    auto r = rules[i];
    if (!w.expect_map(r, rp))
      continue;
    w.check_keys(r, rp, {"tags", "targetGroup"});
    tag_rule rule;
    w.read(r, rp, "targetGroup", rule.target_group);
    if (rule.target_group.empty())
      w.report(rp + ".targetGroup", "missing");
    auto tags = r["tags"];
    if (!tags || !w.expect_map(tags, rp + ".tags"))
      continue;
    for (const auto& kv : tags) {
      if (kv.second.IsNull())
        rule.tags[kv.first.Scalar()] = std::nullopt;
      else if (auto s = w.string_of(kv.second, rp + ".tags."
                                                 + kv.first.Scalar()))
        rule.tags[kv.first.Scalar()] = *s;
    }
    out.tag_rules.push_back(std::move(rule));
  }
}

} // namespace

void read_router(walker& w, const YAML::Node& n, const std::string& path,
                 router& out) {
  if (!w.expect_map(n, path))
    return;
  std::string type;
  w.read(n, path, "type", type);
  if (type == "protocolBased") {
    out.kind = router_kind::protocol_based;
    w.check_keys(n, path,
                 {"type", "trinoHttp", "postgresWire", "mysqlWire",
                  "flightSql"});
    for (const auto& kv : n) {
      auto key = kv.first.Scalar();
      if (auto p = protocol_from_string(key))
        if (auto s = w.string_of(kv.second, path + "." + key))
          out.protocol_to_group[*p] = *s;
    }
  } else if (type == "header") {
    out.kind = router_kind::header;
    w.check_keys(n, path, {"type", "headerName", "headerValueToGroup"});
    w.read(n, path, "headerName", out.header_name);
    if (out.header_name.empty())
      w.report(path + ".headerName", "missing");
    for (auto& c : out.header_name)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    w.read_string_map(n, path, "headerValueToGroup",
                      out.header_value_to_group);
  } else if (type == "userGroup") {
    out.kind = router_kind::user_group;
    w.check_keys(n, path, {"type", "userToGroup"});
    w.read_string_map(n, path, "userToGroup", out.user_to_group);
  } else if (type == "queryRegex") {
    out.kind = router_kind::query_regex;
    w.check_keys(n, path, {"type", "rules"});
    read_regex_rules(w, n, path, out);
  } else if (type == "tags") {
    out.kind = router_kind::tags;
    w.check_keys(n, path, {"type", "rules"});
    read_tag_rules(w, n, path, out);
  } else {
    w.report(path + ".type",
             "unknown router type \"" + type
               + "\" (protocolBased, header, userGroup, queryRegex, tags)");
  }
}

namespace {

void check_group_ref(walker& w, const gateway_config& c,
                     const std::string& path, const std::string& group) {
  if (!group.empty() && !c.find_group(group))
    w.report(path, "unknown cluster group \"" + group + "\"");
}

} // namespace

void check_references(walker& w, const gateway_config& c) {
  for (const auto& g : c.groups) {
    auto gp = "clusterGroups." + g.name;
    std::set<std::string> seen;
    for (size_t i = 0; i < g.members.size(); ++i) {
      auto mp = walker::index(gp + ".members", i);
      if (!c.find_cluster(g.members[i]))
        w.report(mp, "unknown cluster \"" + g.members[i] + "\"");
      if (!seen.insert(g.members[i]).second)
        w.report(mp, "cluster \"" + g.members[i] + "\" listed twice");
    }
  }
  for (size_t i = 0; i < c.routers.size(); ++i) {
    const auto& r = c.routers[i];
    auto rp = walker::index("routers", i);
    for (const auto& [p, g] : r.protocol_to_group)
      check_group_ref(w, c, rp + "." + std::string{to_string(p)}, g);
    for (const auto& [v, g] : r.header_value_to_group)
      check_group_ref(w, c, rp + ".headerValueToGroup." + v, g);
    for (const auto& [u, g] : r.user_to_group)
      check_group_ref(w, c, rp + ".userToGroup." + u, g);
    for (size_t j = 0; j < r.regex_rules.size(); ++j)
      if (!r.regex_rules[j].deny)
        check_group_ref(w, c, walker::index(rp + ".rules", j) + ".targetGroup",
                        r.regex_rules[j].target_group);
    for (size_t j = 0; j < r.tag_rules.size(); ++j)
      check_group_ref(w, c, walker::index(rp + ".rules", j) + ".targetGroup",
                      r.tag_rules[j].target_group);
  }
  check_group_ref(w, c, "routingFallback", c.routing_fallback);
  if (c.routing_fallback.empty() && c.groups.size() > 1)
    w.report("routingFallback", "missing: name the group that takes queries "
                                "no router matched");
  std::map<uint16_t, std::string> ports;
  auto claim = [&](const frontend& f, const std::string& what) {
    if (!f.enabled)
      return;
    auto [it, fresh] = ports.emplace(f.port, what);
    if (!fresh)
      w.report(what + ".port", "port " + std::to_string(f.port)
                                 + " is already used by " + it->second);
  };
  claim(frontend{true, c.queryflux.admin.port, 0, {}, {}}, "queryflux.adminApi");
  claim(c.queryflux.trino_http, "queryflux.frontends.trinoHttp");
  claim(c.queryflux.postgres_wire, "queryflux.frontends.postgresWire");
  claim(c.queryflux.mysql_wire, "queryflux.frontends.mysqlWire");
  claim(c.queryflux.flight_sql, "queryflux.frontends.flightSql");
}


} // namespace qf::config::detail
