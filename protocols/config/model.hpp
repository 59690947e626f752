// The configuration as written by the user, after parsing and validation.
// Plain data: no CAF, no IO. Keys and defaults follow the spec's camelCase.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace qf::config {

using duration = std::chrono::milliseconds;

enum class node_role { standalone, control_plane, worker };

/// The client protocols a frontend can speak; names as in the spec.
enum class protocol { trino_http, postgres_wire, mysql_wire, flight_sql };

std::string_view to_string(protocol p);
std::optional<protocol> protocol_from_string(std::string_view name);

struct frontend {
  bool enabled = false;
  uint16_t port = 0;
  /// Upper bound on concurrently open client connections; 0 (the default):
  /// sized from the process's descriptor limit (io/descriptor_limit).
  uint32_t max_connections = 0;
  /// PEM files; when set, the wire frontends offer TLS (SSLRequest -> 'S').
  std::string tls_cert_file;
  std::string tls_key_file;
  /// Wire frontends: a connection not logged in by then is closed, as
  /// PostgreSQL's authentication_timeout does (60 s there too), so idle
  /// sockets cannot hold maxConnections.
  duration startup_timeout = std::chrono::seconds(60);
  /// Wire frontends: a client that holds a transaction block open and says
  /// nothing for this long is disconnected (its transaction rolls back,
  /// its slot frees), as pgbouncer's idle_transaction_timeout does; 0: never.
  duration idle_transaction_timeout{0};
};

struct trino_http_frontend : frontend {
  /// A request's headers must arrive within this (an idle or byte-a-minute
  /// socket is closed after it).
  duration request_headers_timeout = std::chrono::seconds(10);
  /// A query whose client stops polling for this long is cancelled.
  duration query_client_timeout = std::chrono::minutes(5);
  /// Largest number of rows sent in one page.
  uint32_t max_page_rows = 4096;
};

struct admin_api {
  uint16_t port = 9000;
  std::string username = "admin";
  std::string password = "admin";
  /// PEM files; when set, the admin port (and a worker's ops port) serves
  /// HTTPS only: snapshots carry cluster credentials.
  std::string tls_cert_file;
  std::string tls_key_file;
};

/// What the control plane tells workers to do with their query history.
enum class redaction { full, mask_literals, metadata };

std::string_view to_string(redaction r);
std::optional<redaction> redaction_from_string(std::string_view name);

/// workerApi on a control plane (or standalone): the /worker/* endpoints on
/// the admin port, behind their own bearer secret.
struct worker_api {
  bool enabled = false;
  std::string shared_secret;
  /// Where workers send history instead of the control plane (nullopt: to
  /// the control plane).
  std::optional<std::string> history_endpoint;
  enum redaction history_redaction = redaction::full;
  /// How other control-plane replicas reach this one's admin port, to
  /// forward workers' lease calls while it owns the leases (nullopt:
  /// http://<bind address or host name>:<admin port>).
  std::optional<std::string> advertise_url;
};

/// controlPlane.peerBootstrap: start from a running worker's config.
struct peer_bootstrap {
  /// host:port; every address it resolves to is tried in turn.
  std::string address;
  std::chrono::seconds after = std::chrono::seconds(10);
  std::chrono::seconds max_age = std::chrono::seconds(86400);
};

/// A worker's way to its control plane.
struct control_plane_link {
  std::string url;
  std::string shared_secret;
  std::chrono::seconds poll_timeout = std::chrono::seconds(30);
  std::chrono::seconds heartbeat_interval = std::chrono::seconds(10);
  bool allow_insecure_http = false;
  /// https: the CA file to trust instead of the system's.
  std::string tls_ca_file;
  std::optional<struct peer_bootstrap> peer_bootstrap;
};

enum class coordination_mode { control_plane, local };
enum class unavailable_policy { fail_closed, local_limits };

std::string_view to_string(coordination_mode m);

struct coordination {
  coordination_mode mode = coordination_mode::control_plane;
  unavailable_policy on_unavailable = unavailable_policy::fail_closed;
};

/// A worker's history uplink: an override of the snapshot's endpoint, and
/// how many records wait for delivery at most.
struct worker_history {
  std::optional<std::string> endpoint;
  uint32_t spool_max_records = 50000;
};

/// translation: the failure policy is the control plane's (it reaches
/// workers in the snapshot); scripts and the schema timeout stay local.
/// This build translates no SQL: the settings are carried and validated.
struct translation {
  std::optional<std::string> mode;
  bool error_on_unsupported = false;
  std::vector<std::string> python_scripts;
  duration schema_resolution_timeout = std::chrono::milliseconds(1500);

  bool operator==(const translation&) const = default;
};

enum class engine_kind { duck_db, sqlite, postgres, mysql, trino };

/// How QueryFlux signs in to a Trino cluster: none, basic or bearer.
struct cluster_auth {
  std::string type; // "", "basic", "bearer"
  std::string username;
  std::string password;
  std::string token;

  bool operator==(const cluster_auth&) const = default;
};

std::string_view to_string(engine_kind e);

/// How a cluster's health (and load) is checked, Trino Gateway's
/// clusterStatsConfiguration.monitorType: INFO_API (Trino's /v1/info, the
/// health query elsewhere), JDBC (SQL over the engine's own protocol),
/// JMX (Trino's /v1/jmx), METRICS (its Prometheus endpoint), NOOP.
enum class monitor_type { info_api, jdbc, jmx, metrics, noop };

std::string_view to_string(monitor_type t);
std::optional<monitor_type> monitor_type_from_string(std::string_view name);

/// What a health check asks, for every cluster (monitor) or one
/// (clusters.<name>.monitor, over the global one).
struct health_probe {
  monitor_type type = monitor_type::info_api;
  /// 502, 503 and 504 (a coordinator busy or restarting) are tried again
  /// this many times within one check.
  uint32_t retries = 0;
  /// METRICS: where the cluster serves Prometheus text, and the bounds
  /// that make it healthy (every named metric within its minimum and
  /// maximum), and the metrics that say how many queries run and wait.
  std::string metrics_endpoint = "/metrics";
  std::map<std::string, double> metric_minimum_values{
    {"trino_metadata_name_DiscoveryNodeManager_ActiveNodeCount", 1}};
  std::map<std::string, double> metric_maximum_values;
  std::string running_queries_metric_name = "trino_execution_name_QueryManager_RunningQueries";
  std::string queued_queries_metric_name = "trino_execution_name_QueryManager_QueuedQueries";

  bool operator==(const health_probe&) const = default;
};

struct cluster {
  std::string name;
  engine_kind engine = engine_kind::duck_db;
  /// Omitted: an in-memory database shared by every connection of the cluster.
  std::string database_path;
  bool enabled = true;
  /// Overrides the group's per-cluster limit when set.
  std::optional<uint32_t> max_running_queries;
  /// Statements run once when the database is opened (demo data, setup).
  std::vector<std::string> init_sql;
  std::string health_check_query = "SELECT 1";
  /// duckDb and sqlite: whether clients' SQL may reach beyond the
  /// cluster's own database (files, the network, other databases), with
  /// the gateway's rights on its host. initSql always may.
  bool external_access = false;
  // Server engines (postgres, mysql): a URL, or the fields one by one.
  std::string endpoint; // postgres:// or mysql://user:password@host:port/database; trino: http://
  /// Where people open the cluster (Trino's web UI, behind its own load
  /// balancer); the endpoint when empty. Trino Gateway keeps it apart from
  /// proxyTo.
  std::string external_url;
  std::string host;
  uint16_t port = 0;
  std::string database;
  std::string user;
  std::string password;
  /// Idle backend connections kept for reuse (default: the cluster limit).
  std::optional<uint32_t> pool_size;
  /// postgres and mysql: clients that may each hold one of the cluster's
  /// connections for their own session state (temporary tables, SET,
  /// session locks, PREPARE), per gateway; one more is refused.
  uint32_t max_pinned_sessions = 50;
  /// postgres: plain statements of different clients relayed on one
  /// connection at a time, each behind the last (1: one at a time, the
  /// default: one backend runs a pipeline on one core).
  uint32_t pipeline_depth = 1;
  /// Trino: endpoint is http(s)://host:port, signed in to with this.
  cluster_auth auth;
  /// Trino over https: the CA file to trust (default: the system's), or
  /// no verification at all (local tests only).
  std::string tls_ca_file;
  bool tls_insecure_skip_verify = false;
  /// Trino: whose name queries run under. serviceAccount: auth's user
  /// (the client's when auth names none); impersonate: the client's, which
  /// the cluster must allow auth's user to impersonate.
  std::string query_auth = "serviceAccount";
  /// Its own health probe (clusters.<name>.monitor, over the global one).
  std::optional<health_probe> monitor;

  bool operator==(const cluster&) const = default;
};

enum class strategy_kind { round_robin, least_loaded, random, failover, query_count_based };

std::string_view to_string(strategy_kind s);

struct cluster_group {
  std::string name;
  bool enabled = true;
  std::vector<std::string> members;
  /// The limit of each member cluster that sets none of its own.
  uint32_t max_running_queries = 10;
  uint32_t max_queued_queries = 100;
  std::chrono::seconds capacity_wait_timeout = std::chrono::seconds(300);
  strategy_kind strategy = strategy_kind::round_robin;

  bool operator==(const cluster_group&) const = default;
};

struct regex_rule {
  std::string regex;
  bool deny = false;
  std::string target_group;
  std::string error;
};

struct tag_rule {
  /// A value of nullopt matches any value of a present key.
  std::map<std::string, std::optional<std::string>> tags;
  std::string target_group;
};

enum class router_kind { protocol_based, header, user_group, query_regex, tags };

struct router {
  router_kind kind = router_kind::protocol_based;
  std::map<protocol, std::string> protocol_to_group;       // protocolBased
  std::string header_name;                                 // header (lowercased)
  std::map<std::string, std::string> header_value_to_group; // header
  std::map<std::string, std::string> user_to_group;         // userGroup
  std::vector<regex_rule> regex_rules;                      // queryRegex
  std::vector<tag_rule> tag_rules;                          // tags
};

struct monitor {
  duration task_delay = std::chrono::minutes(1);
  /// Per-check timeout: a hung cluster is marked unhealthy after this.
  duration check_timeout = std::chrono::seconds(10);
  /// The probe of every cluster that names none of its own.
  health_probe probe;

  /// The probe that checks `c`.
  const health_probe& probe_of(const cluster& c) const {
    return c.monitor ? *c.monitor : probe;
  }

  bool operator==(const monitor&) const = default;
};

enum class log_format { text, json };

/// inMemory, or PostgreSQL (its url and whether to migrate it at start).
struct persistence_settings {
  std::string type = "inMemory";
  std::string url;
  bool auto_migrate = true;
};

struct node {
  node_role role = node_role::standalone;
  /// The base of Trino nextUri and infoUri; empty: the address the client
  /// used (its Host, or X-Forwarded-Proto/-Host behind a proxy).
  std::string external_address;
  trino_http_frontend trino_http;
  frontend postgres_wire;
  frontend mysql_wire;
  frontend flight_sql;
  admin_api admin;
  persistence_settings persistence;
  std::chrono::seconds shutdown_drain_timeout = std::chrono::seconds(30);
  /// Event loops (threads) serving the PostgreSQL and MySQL wire
  /// frontends; 0: half the cores the process may use, at least one.
  uint32_t wire_threads = 0;
  /// How many finished query records the in-memory history keeps.
  uint32_t query_history_capacity = 10000;
  /// PostgreSQL history older than this is purged hourly; 0 keeps it all.
  uint32_t query_history_retention_days = 0;
  /// How often a node with PostgreSQL persistence looks for fleet changes
  /// made elsewhere (another control-plane replica); 0: never.
  std::chrono::seconds config_reload_interval = std::chrono::seconds(30);
  struct worker_api worker_api;
  // role: worker only.
  /// Empty: the host name (the pod's name).
  std::string worker_name;
  std::map<std::string, std::string> worker_labels;
  /// The downward API's key="value" lines, merged over worker_labels at
  /// start.
  std::string worker_labels_file;
  control_plane_link control_plane;
  struct coordination coordination;
  worker_history history;
};

/// Trino Gateway's databaseCache: the fleet read from PostgreSQL is served
/// from memory, re-read in the background after refreshAfterWrite, and
/// expires (new queries fail) when not re-read for expireAfterWrite.
/// nullopt turns either off.
struct database_cache {
  bool enabled = false;
  std::optional<duration> expire_after_write = std::chrono::hours(1);
  std::optional<duration> refresh_after_write = std::chrono::seconds(5);
};

/// Who may connect. provider none: everyone (trust).
struct auth {
  bool enabled = false; // provider: static
  /// PostgreSQL clients may send passwords without TLS (local use only).
  /// Trino HTTP has no TLS of its own: terminate TLS in front of it.
  bool allow_cleartext_without_tls = false;
  std::map<std::string, std::string> users; // name -> password
};

struct gateway_config {
  node queryflux;
  struct auth auth;
  monitor health;
  struct database_cache database_cache;
  std::vector<cluster> clusters;
  std::vector<cluster_group> groups;
  std::vector<router> routers;
  std::string routing_fallback;
  struct translation translation;

  const cluster* find_cluster(std::string_view name) const;
  const cluster_group* find_group(std::string_view name) const;
};

} // namespace qf::config
