#include "net/server.hpp"

#include "io/descriptor_limit.hpp"
#include "io/host_name.hpp"
#include "io/usable_cores.hpp"
#include "actors/control/revoked_sessions.hpp"
#include "actors/control/studio_key.hpp"
#include "net/boundary/routes.hpp"
#include "net/boundary/secure_random.hpp"
#include "net/boundary/wire_frontends.hpp"
#include "net/http/client.hpp"
#include "net/http/server.hpp"
#include "net/wire/tcp_server.hpp"
#include "protocols/worker_api/worker_report.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include <fstream>
#include <sstream>
#include <thread>

namespace qf {

namespace {

/// Half the cores by default: the gateway shares its machine with what it
/// serves (a worker runs next to its applications), and on two cores a
/// second loop cost connection-per-statement clients more in wake-ups than
/// it gave persistent ones (docs/performance.md, session 11).
/// A frontend's maxConnections, or the default the descriptors allow.
uint32_t connection_limit(const config::frontend& f) {
  return f.max_connections > 0 ? f.max_connections : io::default_connection_limit();
}

size_t wire_threads(const config::node& q) {
  if (q.wire_threads > 0)
    return q.wire_threads;
  return std::max(1u, io::usable_cores() / 2);
}

wire_session_limits limits_of(const config::frontend& wire) {
  return {wire.startup_timeout, wire.idle_transaction_timeout};
}

std::unique_ptr<caf::actor_system_config> actor_config(const server_options& opts) {
  auto cfg = std::make_unique<caf::actor_system_config>();
  // CAF's idle workers poll every 50 us for 500 rounds after each message
  // before they sleep on a condition variable: 4% of a core on an idle
  // gateway for the reaper's tick alone, and a message from an HTTP or
  // engine thread that finds its worker in such a sleep waits out the
  // rest of it (with the kernel's timer slack, up to 100 us, at every
  // hop of a Trino query). After its spins a worker sleeps on the
  // condition variable at once, which an outside message wakes.
  cfg->set("work-stealing.moderate-poll-attempts", 0);
  // Asleep, each worker still woke every 10 ms to look for work to steal:
  // 1,300 wake-ups a second, each one a context switch that can preempt
  // the wire thread. A message from outside wakes a sleeping worker at
  // once, and blocking work runs on detached actors, so a worker that
  // keeps a message to itself is running and takes it next.
  cfg->set("work-stealing.relaxed-sleep-duration",
           caf::timespan{std::chrono::milliseconds{250}});
  // CAF counts the machine's cores; a container may use fewer.
  cfg->set("scheduler.max-threads", opts.actor_threads > 0
                                      ? opts.actor_threads
                                      : std::max<size_t>(io::usable_cores(), 4));
  return cfg;
}

/// Studio's logins. With PostgreSQL persistence the session key and the
/// logouts are the database's (every replica accepts every session, a
/// restart keeps them, and a logout holds everywhere); else this
/// process's own.
std::shared_ptr<boundary::studio_sessions> studio_sessions_of(const config::node& q,
                                                              const std::string& address,
                                                              caf::actor_system& sys,
                                                              studio_revocations_actor& store) {
  auto key = boundary::random_hex(32);
  auto revoked = std::make_shared<revoked_sessions>();
  boundary::studio_sessions::logout_fn on_logout;
  if (q.persistence.type == "postgres") {
    try {
      key = studio_key::stored_or(q.persistence.url, key);
      revoked->merge(studio_key::revoked(q.persistence.url), 0);
    } catch (const std::exception& e) {
      spdlog::warn("cannot read Studio's session key from the database ({}); sessions are "
                   "this process's own until it restarts",
                   e.what());
    }
    store = sys.spawn<caf::detached>(studio_revocations, q.persistence.url, revoked,
                                     caf::timespan{std::chrono::seconds(2)});
    on_logout = [store](const std::string& id, int64_t expires_at) {
      caf::anon_send(store, atom::put::value, id, expires_at);
    };
  }
  bool loopback = address == "127.0.0.1" || address == "::1" || address == "localhost";
  if (q.admin.username == "admin" && q.admin.password == "admin" && !loopback)
    spdlog::warn("the admin API and Studio listen on {} with the default credentials "
                 "admin/admin: set adminApi.username and adminApi.password",
                 address);
  return std::make_shared<boundary::studio_sessions>(q.admin, std::move(key),
                                                     !q.admin.tls_cert_file.empty(), nullptr,
                                                     std::move(revoked), std::move(on_logout));
}

} // namespace

std::string worker_name_of(const config::node& q) {
  if (!q.worker_name.empty())
    return q.worker_name;
  auto host = io::host_name();
  return worker_api::valid_worker_name(host) ? host : "worker";
}

std::map<std::string, std::string> worker_labels_of(const config::node& q) {
  auto labels = q.worker_labels;
  if (q.worker_labels_file.empty())
    return labels;
  std::ifstream in{q.worker_labels_file};
  if (!in) {
    spdlog::warn("cannot read workerLabelsFile {}: going on without its labels",
                 q.worker_labels_file);
    return labels;
  }
  std::ostringstream text;
  text << in.rdbuf();
  auto parsed = worker_api::parse_labels_file(text.str());
  for (const auto& p : parsed.problems)
    spdlog::warn("{}: {}", q.worker_labels_file, p);
  for (auto& [k, v] : parsed.labels)
    labels[k] = std::move(v);
  return labels;
}

/// How other replicas reach this one's admin port: workerApi.advertiseUrl,
/// else the address it listens on or, listening on every address, the
/// host's canonical name.
std::string advertised_url(const config::node& q, const std::string& address, uint16_t port) {
  if (q.worker_api.advertise_url)
    return *q.worker_api.advertise_url;
  auto host = address;
  if (host == "0.0.0.0" || host == "::" || host.empty()) {
    host = io::canonical_host_name();
  } else if (host.find(':') != std::string::npos) {
    host = "[" + host + "]";
  }
  auto scheme = q.admin.tls_cert_file.empty() ? "http://" : "https://";
  return scheme + host + ":" + std::to_string(port);
}

struct server::impl {
  config::gateway_config cfg;
  std::unique_ptr<caf::actor_system_config> actor_cfg;
  std::unique_ptr<caf::actor_system> sys;
  std::shared_ptr<http_transport> transport; // a worker's
  std::unique_ptr<node> gateway;
  std::unique_ptr<http::service> web;
  std::unique_ptr<wire::service> wire;
  studio_revocations_actor studio_store; // with PostgreSQL persistence
  uint16_t trino = 0, admin = 0, postgres = 0, mysql = 0;
  bool stopped = false;
};

server::server(startup::served_config served, server_options opts)
  : impl_(std::make_unique<impl>()) {
  auto& m = *impl_;
  m.cfg = std::move(served.config);
  const auto& q = m.cfg.queryflux;
  m.actor_cfg = actor_config(opts);
  m.sys = std::make_unique<caf::actor_system>(*m.actor_cfg);
  std::optional<worker_identity> worker;
  if (q.role == config::node_role::worker) {
    m.transport = opts.worker_transport;
    if (!m.transport)
      m.transport = std::make_shared<http::client>(q.control_plane.tls_ca_file);
    worker = worker_identity{worker_name_of(q), worker_labels_of(q), m.transport};
  } else if (q.worker_api.enabled && q.persistence.type == "postgres") {
    // Replicas forward workers' lease calls to the one that owns them.
    m.transport = std::make_shared<http::client>("");
    opts.node.replica_transport = m.transport;
  }
  m.gateway = std::make_unique<node>(*m.sys, m.cfg, std::move(served.fleet),
                                     std::move(served.file_text), std::move(worker), opts.node);
  auto svc = m.gateway->services();
  m.web = std::make_unique<http::service>();
  m.wire = std::make_unique<wire::service>(wire_threads(q));
  try {
    if (q.trino_http.enabled) {
      http::listener_options trino{"trinoHttp", opts.address, q.trino_http.port,
                                   connection_limit(q.trino_http), 16 * 1024 * 1024, "", ""};
      trino.header_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(
        q.trino_http.request_headers_timeout);
      m.trino = m.web->listen(trino, boundary::make_trino_routes(svc));
    }
    http::listener_options admin{q.role == config::node_role::worker ? "opsPort" : "adminApi",
                                 opts.address,
                                 q.admin.port,
                                 // A thousand workers' long polls, and then some.
                                 q.role == config::node_role::worker ? 1000u : 20'000u,
                                 // Workers' history batches: up to 8 MiB.
                                 9 * 1024 * 1024,
                                 q.admin.tls_cert_file,
                                 q.admin.tls_key_file};
    m.admin = m.web->listen(admin, q.role == config::node_role::worker
                                     ? boundary::make_ops_routes(svc, q)
                                     : boundary::make_admin_routes(
                                         svc, q.admin, q.worker_api,
                                         studio_sessions_of(q, opts.address, *m.sys,
                                                            m.studio_store)));
    if (q.postgres_wire.enabled)
      m.postgres = m.wire->listen(
        {"postgresWire", opts.address, q.postgres_wire.port, connection_limit(q.postgres_wire),
         q.postgres_wire.tls_cert_file, q.postgres_wire.tls_key_file},
        boundary::make_pg_frontend(svc, !q.postgres_wire.tls_cert_file.empty(),
                                   limits_of(q.postgres_wire)));
    if (q.mysql_wire.enabled)
      m.mysql = m.wire->listen(
        {"mysqlWire", opts.address, q.mysql_wire.port, connection_limit(q.mysql_wire),
         q.mysql_wire.tls_cert_file, q.mysql_wire.tls_key_file},
        boundary::make_mysql_frontend(svc, !q.mysql_wire.tls_cert_file.empty(),
                                      limits_of(q.mysql_wire)));
  } catch (...) {
    stop();
    throw;
  }
  m.web->start(opts.http_threads);
  m.wire->start();
  if (opts.node.replica_transport)
    m.gateway->elect_lease_owner(advertised_url(q, opts.address, m.admin));
}

server::~server() {
  stop();
}

std::shared_ptr<node_services> server::services() const {
  return impl_->gateway->services();
}

uint16_t server::trino_port() const {
  return impl_->trino;
}

uint16_t server::admin_port() const {
  return impl_->admin;
}

uint16_t server::postgres_port() const {
  return impl_->postgres;
}

uint16_t server::mysql_port() const {
  return impl_->mysql;
}

void server::drain() {
  auto& m = *impl_;
  auto svc = m.gateway->services();
  svc->draining.store(true);
  // The control plane hears it first: its registry shows the worker
  // draining while the queries finish.
  m.gateway->announce_drain(std::chrono::seconds(2));
  auto timeout = m.cfg.queryflux.shutdown_drain_timeout;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (svc->in_flight.load() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto left = svc->in_flight.load();
  if (left > 0)
    spdlog::warn("drain timeout: cancelling {} queries", left);
  // The wire statements' last pages are counted off as they are handed to
  // their sessions' loops: they go out before the loops stop.
  m.wire->settle(std::chrono::seconds(2));
  for (auto& q : svc->queries->all()) {
    caf::anon_send(q.actor, atom::cancel::value, false);
    caf::anon_send_exit(q.actor, caf::exit_reason::user_shutdown);
  }
  m.web->stop_accepting();
  m.web->finish_answers(std::chrono::seconds(2)); // the last pages, served but not yet sent
  m.gateway->release_capacity(std::chrono::seconds(2));
  m.gateway->release_sweep_lock(std::chrono::seconds(2));
  // The records of every query that ended above, a worker's final flush.
  m.gateway->flush_uplink(std::chrono::seconds(10));
}

void server::stop() {
  auto& m = *impl_;
  if (std::exchange(m.stopped, true))
    return;
  if (m.wire)
    m.wire->stop();
  // The fast lane's idle connections are watched by the wire service's
  // io_context, which goes before the node: close them now.
  if (m.gateway)
    if (auto active = m.gateway->services()->snapshot->load())
      for (const auto& [name, cluster] : active->clusters)
        cluster->retire_lanes();
  if (m.web)
    m.web->stop();
  if (m.transport)
    m.transport->stop();
  if (m.gateway) {
    m.gateway->flush_history(std::chrono::seconds(5)); // the last queries' records
    // Finished queries linger for their client's last poll until the
    // reaper ends them; the reaper goes with the node, so they go now.
    auto svc = m.gateway->services();
    for (const auto* registry : {svc->queries.get(), svc->wire_statements.get()})
      for (auto& q : registry->all())
        caf::anon_send_exit(q.actor, caf::exit_reason::user_shutdown);
    m.gateway->stop();
  }
  if (m.studio_store)
    caf::anon_send_exit(m.studio_store, caf::exit_reason::user_shutdown);
  // Actors answering HTTP requests post their answers to the listeners'
  // io_context: it must outlive the last of them, so they all end first.
  if (m.sys)
    m.sys->await_all_actors_done();
}

} // namespace qf
