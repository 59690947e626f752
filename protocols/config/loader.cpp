// YAML -> gateway_config, with every problem reported against its path.
#include "protocols/config/loader.hpp"

#include <re2/re2.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <fstream>
#include <initializer_list>
#include <set>
#include <sstream>

namespace qf::config {

namespace {

/// Collects problems while the walk goes on, so one run reports them all.
class walker {
public:
  std::vector<std::string> problems;

  void report(const std::string& path, const std::string& what) {
    problems.push_back(path.empty() ? what : path + ": " + what);
  }

  bool expect_map(const YAML::Node& n, const std::string& path) {
    if (n.IsMap())
      return true;
    report(path, "expected a mapping");
    return false;
  }

  void check_keys(const YAML::Node& n, const std::string& path,
                  std::initializer_list<std::string_view> allowed) {
    for (const auto& kv : n) {
      auto key = kv.first.Scalar();
      bool known = false;
      for (auto a : allowed)
        known = known || a == key;
      if (!known)
        report(join(path, key), "unknown key");
    }
  }

  static std::string join(const std::string& path, std::string_view key) {
    return path.empty() ? std::string{key} : path + "." + std::string{key};
  }

  static std::string index(const std::string& path, size_t i) {
    return path + "[" + std::to_string(i) + "]";
  }

  std::optional<std::string> string_of(const YAML::Node& n,
                                       const std::string& path) {
    if (n.IsScalar())
      return n.Scalar();
    report(path, "expected a string");
    return std::nullopt;
  }

  void read(const YAML::Node& parent, const std::string& path,
            std::string_view key, std::string& out) {
    if (auto n = parent[std::string{key}]; n && !n.IsNull())
      if (auto s = string_of(n, join(path, key)))
        out = *s;
  }

  void read(const YAML::Node& parent, const std::string& path,
            std::string_view key, bool& out) {
    auto n = parent[std::string{key}];
    if (!n || n.IsNull())
      return;
    bool value = false;
    if (n.IsScalar() && YAML::convert<bool>::decode(n, value))
      out = value;
    else
      report(join(path, key), "expected true or false");
  }

  template <class Int>
  bool read_uint(const YAML::Node& parent, const std::string& path,
                 std::string_view key, Int& out, uint64_t max) {
    auto n = parent[std::string{key}];
    if (!n || n.IsNull())
      return false;
    uint64_t value = 0;
    const auto& s = n.IsScalar() ? n.Scalar() : std::string{};
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (s.empty() || ec != std::errc{} || end != s.data() + s.size()
        || value > max) {
      report(join(path, key), "expected a whole number from 0 to "
                                + std::to_string(max));
      return false;
    }
    out = static_cast<Int>(value);
    return true;
  }

  void read_port(const YAML::Node& parent, const std::string& path,
                 uint16_t& out) {
    if (read_uint(parent, path, "port", out, 65535) && out == 0)
      report(join(path, "port"), "port 0 is not allowed");
  }

  void read(const YAML::Node& parent, const std::string& path,
            std::string_view key, duration& out) {
    auto n = parent[std::string{key}];
    if (!n || n.IsNull())
      return;
    auto d = n.IsScalar() ? parse_duration(n.Scalar()) : std::nullopt;
    if (d)
      out = *d;
    else
      report(join(path, key),
             "expected a duration such as 500ms, 30s, 1m or 1h");
  }

  void read_seconds(const YAML::Node& parent, const std::string& path,
                    std::string_view key, std::chrono::seconds& out) {
    uint32_t secs = 0;
    if (read_uint(parent, path, key, secs, 365u * 24 * 3600))
      out = std::chrono::seconds(secs);
  }

  void read_string_list(const YAML::Node& parent, const std::string& path,
                        std::string_view key, std::vector<std::string>& out) {
    auto n = parent[std::string{key}];
    if (!n || n.IsNull())
      return;
    auto p = join(path, key);
    if (!n.IsSequence()) {
      report(p, "expected a list");
      return;
    }
    for (size_t i = 0; i < n.size(); ++i)
      if (auto s = string_of(n[i], index(p, i)))
        out.push_back(*s);
  }

  void read_string_map(const YAML::Node& parent, const std::string& path,
                       std::string_view key,
                       std::map<std::string, std::string>& out) {
    auto n = parent[std::string{key}];
    if (!n || n.IsNull())
      return;
    auto p = join(path, key);
    if (!expect_map(n, p))
      return;
    for (const auto& kv : n)
      if (auto s = string_of(kv.second, join(p, kv.first.Scalar())))
        out[kv.first.Scalar()] = *s;
  }
};

void read_frontend(walker& w, const YAML::Node& n, const std::string& path,
                   frontend& out, std::initializer_list<std::string_view> extra
                                  = {}) {
  if (!w.expect_map(n, path))
    return;
  std::vector<std::string_view> keys{"enabled", "port", "maxConnections",
                                     "tls"};
  keys.insert(keys.end(), extra.begin(), extra.end());
  for (const auto& kv : n) {
    auto key = kv.first.Scalar();
    if (std::find(keys.begin(), keys.end(), key) == keys.end())
      w.report(walker::join(path, key), "unknown key");
  }
  out.enabled = true;
  w.read(n, path, "enabled", out.enabled);
  w.read_port(n, path, out.port);
  w.read_uint(n, path, "maxConnections", out.max_connections, 1'000'000);
  if (auto tls = n["tls"]; tls && !tls.IsNull()) {
    auto tp = path + ".tls";
    if (w.expect_map(tls, tp)) {
      w.check_keys(tls, tp, {"certFile", "keyFile"});
      w.read(tls, tp, "certFile", out.tls_cert_file);
      w.read(tls, tp, "keyFile", out.tls_key_file);
      if (out.tls_cert_file.empty() || out.tls_key_file.empty())
        w.report(tp, "needs both certFile and keyFile");
    }
  }
}

void read_node(walker& w, const YAML::Node& n, node& out) {
  const std::string path = "queryflux";
  if (!w.expect_map(n, path))
    return;
  w.check_keys(n, path,
               {"role", "externalAddress", "frontends", "adminApi",
                "persistence", "shutdownDrainTimeoutSecs",
                "queryHistoryCapacity", "configReloadIntervalSecs",
                "queryHistoryRetentionDays", "wireThreads"});
  std::string role = "standalone";
  w.read(n, path, "role", role);
  if (role == "standalone")
    out.role = node_role::standalone;
  else if (role == "controlPlane")
    out.role = node_role::control_plane;
  else if (role == "worker")
    out.role = node_role::worker;
  else
    w.report(path + ".role", "expected standalone, controlPlane or worker");
  if (out.role == node_role::worker)
    w.report(path + ".role", "worker is not available in this build (standalone or controlPlane)");
  w.read(n, path, "externalAddress", out.external_address);
  while (!out.external_address.empty() && out.external_address.back() == '/')
    out.external_address.pop_back();
  if (out.external_address.rfind("http://", 0) != 0
      && out.external_address.rfind("https://", 0) != 0)
    w.report(path + ".externalAddress", "expected an http:// or https:// URL");
  if (auto f = n["frontends"]; f && !f.IsNull()) {
    auto fp = path + ".frontends";
    if (w.expect_map(f, fp)) {
      w.check_keys(f, fp,
                   {"trinoHttp", "postgresWire", "mysqlWire", "flightSql"});
      out.trino_http.enabled = false;
      if (auto t = f["trinoHttp"]) {
        read_frontend(w, t, fp + ".trinoHttp", out.trino_http,
                      {"queryClientTimeout", "maxPageRows"});
        if (t.IsMap()) {
          w.read(t, fp + ".trinoHttp", "queryClientTimeout",
                 out.trino_http.query_client_timeout);
          w.read_uint(t, fp + ".trinoHttp", "maxPageRows",
                      out.trino_http.max_page_rows, 1'000'000);
          if (out.trino_http.max_page_rows == 0)
            w.report(fp + ".trinoHttp.maxPageRows", "must be at least 1");
        }
      }
      for (auto [key, wire] : {std::pair{"postgresWire", &out.postgres_wire},
                               std::pair{"mysqlWire", &out.mysql_wire}}) {
        auto section = f[key];
        if (!section)
          continue;
        auto wp = fp + "." + key;
        read_frontend(w, section, wp, *wire, {"startupTimeout", "idleTransactionTimeout"});
        if (section.IsMap()) {
          w.read(section, wp, "startupTimeout", wire->startup_timeout);
          w.read(section, wp, "idleTransactionTimeout", wire->idle_transaction_timeout);
        }
        if (wire->startup_timeout <= duration::zero())
          w.report(wp + ".startupTimeout", "must be longer than 0");
      }
      if (auto fl = f["flightSql"])
        read_frontend(w, fl, fp + ".flightSql", out.flight_sql);
      if (out.flight_sql.enabled)
        w.report(fp + ".flightSql",
                 "this frontend is not available in this build yet");
    }
  }
  if (out.trino_http.enabled && out.trino_http.port == 0)
    out.trino_http.port = 8080;
  if (out.postgres_wire.enabled && out.postgres_wire.port == 0)
    out.postgres_wire.port = 5432;
  if (out.mysql_wire.enabled && out.mysql_wire.port == 0)
    out.mysql_wire.port = 3306;
  if (auto a = n["adminApi"]; a && !a.IsNull()) {
    auto ap = path + ".adminApi";
    if (w.expect_map(a, ap)) {
      w.check_keys(a, ap, {"port", "username", "password"});
      w.read_port(a, ap, out.admin.port);
      w.read(a, ap, "username", out.admin.username);
      w.read(a, ap, "password", out.admin.password);
    }
  }
  if (auto p = n["persistence"]; p && !p.IsNull()) {
    auto pp = path + ".persistence";
    if (w.expect_map(p, pp)) {
      w.check_keys(p, pp, {"type", "url", "autoMigrate"});
      auto& ps = out.persistence;
      w.read(p, pp, "type", ps.type);
      w.read(p, pp, "url", ps.url);
      w.read(p, pp, "autoMigrate", ps.auto_migrate);
      if (ps.type != "inMemory" && ps.type != "postgres")
        w.report(pp + ".type", "unknown type \"" + ps.type + "\" (inMemory or postgres)");
      if (ps.type == "postgres" && ps.url.rfind("postgres://", 0) != 0
          && ps.url.rfind("postgresql://", 0) != 0)
        w.report(pp + ".url", "expected a postgres:// URL");
    }
  }
  w.read_seconds(n, path, "shutdownDrainTimeoutSecs",
                 out.shutdown_drain_timeout);
  w.read_uint(n, path, "queryHistoryCapacity", out.query_history_capacity,
              10'000'000);
  w.read_uint(n, path, "queryHistoryRetentionDays",
              out.query_history_retention_days, 36'500);
  w.read_seconds(n, path, "configReloadIntervalSecs", out.config_reload_interval);
  w.read_uint(n, path, "wireThreads", out.wire_threads, 64);
  if (out.role == node_role::control_plane && out.persistence.type != "postgres")
    w.report(path + ".persistence.type",
             "a controlPlane keeps the fleet in PostgreSQL: set type: postgres and its url");
}

/// A duration that `null` turns off (databaseCache's two).
void read_optional_duration(walker& w, const YAML::Node& parent, const std::string& path,
                            std::string_view key, std::optional<duration>& out) {
  auto n = parent[std::string{key}];
  if (!n)
    return;
  if (n.IsNull()) {
    out.reset();
    return;
  }
  duration d{};
  w.read(parent, path, key, d);
  out = d;
}

void read_database_cache(walker& w, const YAML::Node& n, database_cache& out) {
  const std::string path = "databaseCache";
  if (!w.expect_map(n, path))
    return;
  w.check_keys(n, path, {"enabled", "expireAfterWrite", "refreshAfterWrite"});
  w.read(n, path, "enabled", out.enabled);
  read_optional_duration(w, n, path, "expireAfterWrite", out.expire_after_write);
  read_optional_duration(w, n, path, "refreshAfterWrite", out.refresh_after_write);
}

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

void read_cluster(walker& w, const std::string& name, const YAML::Node& n,
                  const std::string& path, cluster& out) {
  out.name = name;
  if (!w.expect_map(n, path))
    return;
  w.check_keys(n, path,
               {"engine", "databasePath", "enabled", "maxRunningQueries",
                "initSql", "healthCheckQuery", "endpoint", "host", "port",
                "database", "user", "password", "poolSize", "auth", "queryAuth", "tls",
                "externalAccess", "maxPinnedSessions", "pipelineDepth"});
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
                     strategy_kind::random, strategy_kind::failover})
        if (to_string(k) == type) {
          out.strategy = k;
          found = true;
        }
      if (!found)
        w.report(sp + ".type", "unknown strategy \"" + type
                                 + "\" (roundRobin, leastLoaded, random, "
                                   "failover)");
    }
  }
}

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

void check_group_ref(walker& w, const gateway_config& c,
                     const std::string& path, const std::string& group) {
  if (!group.empty() && !c.find_group(group))
    w.report(path, "unknown cluster group \"" + group + "\"");
}

/// Cross-references: run after the whole file is read.
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

void read_auth(walker& w, const YAML::Node& n, gateway_config& c) {
  const std::string path = "auth";
  if (!w.expect_map(n, path))
    return;
  w.check_keys(n, path, {"provider", "allowCleartextWithoutTls", "staticUsers"});
  std::string provider = "none";
  w.read(n, path, "provider", provider);
  if (provider == "static")
    c.auth.enabled = true;
  else if (provider != "none")
    w.report(path + ".provider", "unknown provider \"" + provider
                                   + "\" (none or static)");
  w.read(n, path, "allowCleartextWithoutTls",
         c.auth.allow_cleartext_without_tls);
  if (auto s = n["staticUsers"]; s && !s.IsNull()) {
    auto sp = path + ".staticUsers";
    if (w.expect_map(s, sp)) {
      w.check_keys(s, sp, {"users"});
      auto users = s["users"];
      if (users && w.expect_map(users, sp + ".users"))
        for (const auto& kv : users) {
          auto up = sp + ".users." + kv.first.Scalar();
          if (!w.expect_map(kv.second, up))
            continue;
          w.check_keys(kv.second, up, {"password"});
          std::string password;
          w.read(kv.second, up, "password", password);
          if (password.empty())
            w.report(up + ".password", "missing");
          c.auth.users[kv.first.Scalar()] = password;
        }
    }
  }
  if (c.auth.enabled && c.auth.users.empty())
    w.report(path + ".staticUsers.users", "provider static needs users");
}

gateway_config read_root(walker& w, const YAML::Node& root) {
  gateway_config c;
  if (!w.expect_map(root, ""))
    return c;
  w.check_keys(root, "",
               {"queryflux", "monitor", "clusters", "clusterGroups", "routers",
                "routingFallback", "auth", "databaseCache"});
  if (auto d = root["databaseCache"]; d && !d.IsNull())
    read_database_cache(w, d, c.database_cache);
  if (auto a = root["auth"]; a && !a.IsNull())
    read_auth(w, a, c);
  if (auto n = root["queryflux"])
    read_node(w, n, c.queryflux);
  else
    w.report("queryflux", "missing");
  if (auto m = root["monitor"]; m && !m.IsNull() && w.expect_map(m, "monitor")) {
    w.check_keys(m, "monitor", {"taskDelay", "checkTimeout"});
    w.read(m, "monitor", "taskDelay", c.health.task_delay);
    w.read(m, "monitor", "checkTimeout", c.health.check_timeout);
  }
  if (auto cl = root["clusters"]; cl && !cl.IsNull()
                                  && w.expect_map(cl, "clusters"))
    for (const auto& kv : cl) {
      cluster x;
      read_cluster(w, kv.first.Scalar(), kv.second,
                   "clusters." + kv.first.Scalar(), x);
      c.clusters.push_back(std::move(x));
    }
  if (auto gr = root["clusterGroups"];
      gr && !gr.IsNull() && w.expect_map(gr, "clusterGroups"))
    for (const auto& kv : gr) {
      cluster_group g;
      read_group(w, kv.first.Scalar(), kv.second,
                 "clusterGroups." + kv.first.Scalar(), g);
      c.groups.push_back(std::move(g));
    }
  if (c.groups.empty())
    w.report("clusterGroups", "needs at least one group");
  if (auto rs = root["routers"]; rs && !rs.IsNull()) {
    if (!rs.IsSequence())
      w.report("routers", "expected a list");
    else
      for (size_t i = 0; i < rs.size(); ++i) {
        router r;
        read_router(w, rs[i], walker::index("routers", i), r);
        c.routers.push_back(std::move(r));
      }
  }
  w.read(root, "", "routingFallback", c.routing_fallback);
  if (c.routing_fallback.empty() && c.groups.size() == 1)
    c.routing_fallback = c.groups.front().name;
  check_references(w, c);
  return c;
}

} // namespace

std::optional<duration> parse_duration(std::string_view text) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(),
                                   value);
  if (ec != std::errc{} || end == text.data() || value > 1'000'000'000)
    return std::nullopt;
  auto unit = std::string_view{end, static_cast<size_t>(text.data()
                                                         + text.size() - end)};
  using namespace std::chrono;
  if (unit == "ms")
    return milliseconds(value);
  if (unit == "s")
    return seconds(value);
  if (unit == "m")
    return minutes(value);
  if (unit == "h")
    return hours(value);
  if (unit == "d")
    return hours(24 * value);
  return std::nullopt;
}

load_result load_from_string(std::string_view yaml_text) {
  load_result result;
  walker w;
  try {
    auto root = YAML::Load(std::string{yaml_text});
    auto config = read_root(w, root);
    if (w.problems.empty())
      result.config = std::move(config);
  } catch (const YAML::Exception& e) {
    std::ostringstream msg;
    msg << "line " << e.mark.line + 1 << ", column " << e.mark.column + 1
        << ": " << e.msg;
    w.problems.push_back(msg.str());
  }
  result.problems = std::move(w.problems);
  return result;
}

load_result load_from_file(const std::string& path) {
  std::ifstream in{path};
  if (!in) {
    load_result result;
    result.problems.push_back(path + ": cannot read the file");
    return result;
  }
  std::ostringstream text;
  text << in.rdbuf();
  return load_from_string(text.str());
}

} // namespace qf::config
