// The node-local part of the config: queryflux.*, auth, databaseCache.
#include "protocols/config/loader_sections.hpp"

namespace qf::config::detail {

namespace {

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
  if (n["maxConnections"] && out.max_connections == 0)
    w.report(path + ".maxConnections", "must be at least 1 (leave it out to size it from the "
                                       "descriptor limit)");
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

} // namespace

void read_node(walker& w, const YAML::Node& n, node& out) {
  const std::string path = "queryflux";
  if (!w.expect_map(n, path))
    return;
  w.check_keys(n, path,
               {"role", "externalAddress", "frontends", "adminApi",
                "persistence", "shutdownDrainTimeoutSecs",
                "queryHistoryCapacity", "configReloadIntervalSecs",
                "queryHistoryRetentionDays", "wireThreads", "workerApi", "workerName",
                "workerLabels", "workerLabelsFile", "controlPlane", "coordination",
                "history"});
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
  w.read(n, path, "externalAddress", out.external_address);
  while (!out.external_address.empty() && out.external_address.back() == '/')
    out.external_address.pop_back();
  if (!out.external_address.empty() && out.external_address.rfind("http://", 0) != 0
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
                      {"queryClientTimeout", "maxPageRows", "requestHeadersTimeout"});
        if (t.IsMap()) {
          w.read(t, fp + ".trinoHttp", "requestHeadersTimeout",
                 out.trino_http.request_headers_timeout);
          if (out.trino_http.request_headers_timeout <= duration{0})
            w.report(fp + ".trinoHttp.requestHeadersTimeout", "must be longer than 0");
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
      w.check_keys(a, ap, {"port", "username", "password", "tls"});
      w.read_port(a, ap, out.admin.port);
      w.read(a, ap, "username", out.admin.username);
      w.read(a, ap, "password", out.admin.password);
      if (auto tls = a["tls"]; tls && !tls.IsNull() && w.expect_map(tls, ap + ".tls")) {
        w.check_keys(tls, ap + ".tls", {"certFile", "keyFile"});
        w.read(tls, ap + ".tls", "certFile", out.admin.tls_cert_file);
        w.read(tls, ap + ".tls", "keyFile", out.admin.tls_key_file);
        if (out.admin.tls_cert_file.empty() || out.admin.tls_key_file.empty())
          w.report(ap + ".tls", "needs both certFile and keyFile");
      }
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
  // A control plane serves workers unless told otherwise.
  out.worker_api.enabled = out.role == node_role::control_plane;
  if (auto wa = n["workerApi"]; wa && !wa.IsNull() && out.role != node_role::worker)
    read_worker_api(w, wa, path + ".workerApi", out.worker_api);
  else if (out.role == node_role::control_plane)
    w.report(path + ".workerApi", "missing: a controlPlane serves workers: set its sharedSecret");
  read_worker_settings(w, n, out);
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


} // namespace qf::config::detail
