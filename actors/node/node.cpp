// Composition of one node's actors from a validated config.
#include "actors/node/node.hpp"

#include "actors/control/config_store.hpp"
#include "actors/control/config_writer.hpp"
#include "actors/control/history_store.hpp"
#include "actors/control/lease_forwarder.hpp"
#include "actors/control/lease_owner.hpp"
#include "actors/control/lease_table.hpp"
#include "actors/control/revision_listener.hpp"
#include "actors/control/worker_registry.hpp"
#include "actors/worker/capacity.hpp"
#include "actors/worker/control_plane_link.hpp"
#include "actors/worker/history_spool.hpp"
#include "actors/data/query_reaper.hpp"
#include "actors/node/engine_reconciler.hpp"
#include "actors/node/snapshot_holder.hpp"
#include "io/host_name.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <cctype>
#include <charconv>
#include <cstdio>
#include <ctime>
#include <random>

namespace qf {


void node_services::record_finished(query_record r, double seconds,
                                    metrics::route_series* series) const {
  if (series)
    stats->query_finished(*series, r.status, seconds);
  else
    stats->query_finished(r.engine_type.empty() ? "none" : r.engine_type,
                          r.cluster_group.empty() ? "none" : r.cluster_group, r.status,
                          r.protocol, seconds);
  if (outbox)
    outbox->push(r);
  history->record(std::move(r));
}

std::string node_services::query_id(uint64_t ticket, std::string_view prefix) const {
  // The date part changes once a second; formatting it per query showed in
  // the PostgreSQL wire fast lane's profile.
  thread_local std::time_t stamped = -1;
  thread_local char stamp[64];
  auto now = std::time(nullptr);
  if (now != stamped) {
    std::tm utc{};
    gmtime_r(&now, &utc);
    std::snprintf(stamp, sizeof(stamp), "%04d%02d%02d_%02d%02d%02d_", utc.tm_year + 1900,
                  utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec);
    stamped = now;
  }
  char counter[6] = "00000";
  for (auto n = ticket % 100000, i = uint64_t{5}; i-- > 0; n /= 10)
    counter[i] = static_cast<char>('0' + n % 10);
  std::string out;
  out.reserve(prefix.size() + 48 + node_suffix.size());
  out.append(prefix).append(stamp).append(counter, 5).append("_").append(node_suffix);
  char digits[20];
  auto end = std::to_chars(digits, digits + sizeof(digits), ticket).ptr;
  out.append("_").append(digits, end);
  return out; // by name: a returned append() would be copied
}

std::vector<statement_view> node_services::unfinished_statements() const {
  std::vector<statement_view> out;
  // wire_sessions: the PostgreSQL sessions' fast-lane statements.
  for (const auto* registry : {queries.get(), wire_statements.get(), wire_sessions.get()})
    for (const auto& q : registry->all())
      if (q.summary && !(q.live && q.live->finished.load()))
        if (auto v = q.summary->view())
          out.push_back(std::move(*v));
  return out;
}

namespace {

std::string random_hex(size_t bytes) {
  std::random_device rd;
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < bytes; ++i) {
    auto b = rd() & 0xFF;
    out += hex[b >> 4];
    out += hex[b & 0xF];
  }
  return out;
}

/// How many connections write workers' history batches (a control plane
/// on PostgreSQL): PostgreSQL works on two batches at once while the HTTP
/// threads read the next ones.
constexpr int history_ingest_writers = 3;

/// A replica's own queries renew their leases this often: there are few
/// replicas, and a dead one's slots are back within three of it.
constexpr std::chrono::seconds replica_heartbeat{1};

/// The holder name of a control-plane replica's own queries: its host
/// and the process's random suffix, as a worker name may spell them.
std::string replica_name_of(const std::string& suffix) {
  std::string name = "control-plane-";
  for (char c : io::host_name())
    name += std::isalnum(static_cast<unsigned char>(c)) || c == '.' ? c : '-';
  return name + "-" + suffix;
}

} // namespace

node::node(caf::actor_system& sys, const config::gateway_config& cfg,
           config::fleet fleet, std::string config_text, std::optional<worker_identity> worker,
           node_options options)
  : services_(std::make_shared<node_services>()) {
  auto& svc = *services_;
  const auto& q = cfg.queryflux;
  std::random_device rd;
  static constexpr char alphabet[] = "abcdefghijkmnpqrstuvwxyz23456789";
  for (int i = 0; i < 5; ++i)
    svc.node_suffix += alphabet[rd() % (sizeof(alphabet) - 1)];
  svc.sys = &sys;
  svc.role = q.role;
  svc.stats = std::make_shared<metrics>();
  svc.queries = std::make_shared<query_registry>();
  svc.wire_sessions = std::make_shared<query_registry>();
  svc.wire_statements = std::make_shared<query_registry>();
  svc.snapshot = std::make_shared<snapshot_cell>();
  svc.first_round = std::make_shared<first_health_round>();
  svc.external_address = q.external_address;
  svc.trino = q.trino_http;
  svc.history = std::make_shared<history_ring>(size_t{q.query_history_capacity});

  reaper_settings reaping;
  reaping.client_timeout = q.trino_http.query_client_timeout;
  // The flag lives as long as the services (the aliasing constructor).
  reaping.draining = std::shared_ptr<const std::atomic<bool>>(services_, &svc.draining);
  actors_.push_back(sys.spawn(query_reaper, svc.queries, reaping));
  const bool stored = q.persistence.type == "postgres";
  if (stored) {
    svc.outbox = std::make_shared<history_outbox>(100'000);
    history_store_settings hs;
    hs.url = q.persistence.url;
    hs.retention_days = q.query_history_retention_days;
    svc.history_store = sys.spawn<caf::detached>(history_store, svc.outbox,
                                                 svc.stats, hs);
    actors_.push_back(svc.history_store);
    if (q.worker_api.enabled && q.role != config::node_role::worker) {
      hs.retention_days = 0; // the store above purges
      for (int i = 0; i < history_ingest_writers; ++i) {
        svc.history_writers.push_back(sys.spawn<caf::detached>(
          history_store, std::make_shared<history_outbox>(1), svc.stats, hs));
        actors_.push_back(svc.history_writers.back());
      }
    }
  }
  if (q.worker_api.enabled && q.role != config::node_role::worker) {
    svc.config_store = sys.spawn(config_store, svc.stats);
    actors_.push_back(caf::actor_cast<caf::actor>(svc.config_store));
    registry_store_actor registry_db;
    if (stored) {
      registry_db = sys.spawn<caf::detached>(registry_store, q.persistence.url);
      actors_.push_back(caf::actor_cast<caf::actor>(registry_db));
    }
    svc.worker_registry = sys.spawn(worker_registry, registry_db);
    actors_.push_back(caf::actor_cast<caf::actor>(svc.worker_registry));
    lease_table_settings leasing;
    leasing.cell = svc.snapshot;
    leasing.stats = svc.stats;
    if (options.lease_grace)
      leasing.grace = *options.lease_grace;
    if (stored && options.replica_transport) {
      // Replicas on one database: one of them owns the leases, the others
      // forward workers' calls and lease their own queries' slots from it.
      database_url_ = q.persistence.url;
      replica_name_ = replica_name_of(svc.node_suffix);
      lease_forwarder_settings forwarding{options.replica_transport, q.worker_api.shared_secret};
      leasing.forwarder = sys.spawn(lease_forwarder, std::move(forwarding));
      actors_.push_back(caf::actor_cast<caf::actor>(leasing.forwarder));
      auto own = std::make_shared<capacity_settings>();
      own->control_plane.shared_secret = q.worker_api.shared_secret;
      own->control_plane.heartbeat_interval = replica_heartbeat;
      own->worker_name = replica_name_;
      own->incarnation = random_hex(16);
      own->transport = options.replica_transport;
      own->cell = svc.snapshot;
      own->stats = svc.stats;
      svc.capacity = sys.spawn(capacity, std::move(own));
      actors_.push_back(caf::actor_cast<caf::actor>(svc.capacity));
      leasing.replicated = true;
      leasing.replica = replica_name_;
      leasing.own_ttl_secs = static_cast<uint32_t>(leasing.ttl_intervals
                                                   * replica_heartbeat.count());
      leasing.replica_client = svc.capacity;
    }
    svc.lease_table = sys.spawn(lease_table, std::move(leasing));
    actors_.push_back(caf::actor_cast<caf::actor>(svc.lease_table));
  }
  const bool shares_capacity
    = worker && q.coordination.mode == config::coordination_mode::control_plane;
  const auto incarnation = random_hex(16);
  if (shares_capacity) {
    auto leasing = std::make_shared<capacity_settings>();
    leasing->control_plane = q.control_plane;
    leasing->coordination = q.coordination;
    leasing->worker_name = worker->name;
    leasing->incarnation = incarnation;
    leasing->transport = worker->transport;
    leasing->cell = svc.snapshot;
    leasing->stats = svc.stats;
    svc.capacity = sys.spawn(capacity, std::move(leasing));
    actors_.push_back(caf::actor_cast<caf::actor>(svc.capacity));
  }
  // Health checks count engines' running queries unless another node of
  // the fleet holds the engine-reconcile lock (the reconciler decides).
  auto counting = std::make_shared<std::atomic<bool>>(!shares_capacity);
  if (svc.lease_table || shares_capacity) {
    engine_reconciler_settings reconciling;
    reconciling.counting = counting;
    reconciling.cell = svc.snapshot;
    reconciling.stats = svc.stats;
    if (svc.lease_table) {
      reconciling.holder = replica_name_.empty() ? replica_name_of(svc.node_suffix)
                                                 : replica_name_;
      reconciling.table = svc.lease_table;
    } else {
      reconciling.holder = worker->name;
      reconciling.url = q.control_plane.url;
      reconciling.shared_secret = q.control_plane.shared_secret;
      reconciling.transport = worker->transport;
    }
    svc.reconciler = sys.spawn(engine_reconciler, std::move(reconciling));
    actors_.push_back(caf::actor_cast<caf::actor>(svc.reconciler));
  }
  snapshot_holder_settings holding;
  holding.cell = svc.snapshot;
  holding.ctx = fleet_context{&sys, svc.stats, svc.first_round,
                              caf::actor_cast<caf::actor>(svc.capacity),
                              caf::actor_cast<caf::actor>(svc.lease_table), counting};
  holding.store = svc.config_store;
  if (!worker)
    holding.first = fleet_update{std::make_shared<const config::gateway_config>(cfg),
                                 std::move(fleet)};
  svc.snapshot_holder = sys.spawn(snapshot_holder, std::move(holding));
  actors_.push_back(caf::actor_cast<caf::actor>(svc.snapshot_holder));

  if (worker) {
    svc.worker_name = worker->name;
    svc.worker_labels = worker->labels;
    svc.stats->expose_reload_stage("worker_activate");
    auto link = std::make_shared<control_plane_link_settings>();
    link->control_plane = q.control_plane;
    link->worker_name = worker->name;
    link->labels = worker->labels;
    link->version = QF_VERSION;
    link->incarnation = incarnation;
    link->coordination = q.coordination;
    link->worker_yaml = std::move(config_text);
    link->peer_tls = !q.admin.tls_cert_file.empty();
    link->transport = worker->transport;
    link->holder = svc.snapshot_holder;
    link->stats = svc.stats;
    svc.control_plane = sys.spawn(control_plane_link, std::move(link));
    actors_.push_back(caf::actor_cast<caf::actor>(svc.control_plane));
    auto uplink = std::make_shared<history_spool_settings>();
    uplink->spool = std::make_shared<history_outbox>(size_t{q.history.spool_max_records});
    uplink->cell = svc.snapshot;
    uplink->endpoint = q.history.endpoint;
    uplink->control_plane = q.control_plane;
    uplink->worker_name = worker->name;
    uplink->transport = worker->transport;
    uplink->stats = svc.stats;
    svc.outbox = uplink->spool;
    svc.history_spool = sys.spawn(history_spool, std::move(uplink));
    actors_.push_back(caf::actor_cast<caf::actor>(svc.history_spool));
    return; // no admin API, no config of its own to change
  }

  config_writer_settings writing;
  if (stored) {
    writing.url = q.persistence.url;
    const auto& cache = cfg.database_cache;
    if (cache.enabled) {
      writing.reload_every = cache.refresh_after_write.value_or(std::chrono::milliseconds{0});
      writing.expire_after = cache.expire_after_write;
    } else {
      writing.reload_every = q.config_reload_interval;
    }
  }
  writing.config_text = std::move(config_text);
  writing.snapshot = svc.snapshot;
  writing.holder = svc.snapshot_holder;
  writing.stats = svc.stats;
  svc.config_writer = sys.spawn<caf::detached>(config_writer, std::move(writing));
  actors_.push_back(svc.config_writer);
  // Changes through any replica reach this one (and its workers) now,
  // not at the next reload.
  if (stored)
    actors_.push_back(sys.spawn<caf::detached>(revision_listener, q.persistence.url,
                                               svc.config_writer));
}

node::~node() {
  stop();
}

void node::flush_uplink(std::chrono::milliseconds timeout) {
  auto spool = services_->history_spool;
  if (!spool)
    return;
  caf::scoped_actor self{*services_->sys};
  self->request(spool, timeout, atom::flush::value)
    .receive(
      [](uint64_t left) {
        if (left > 0)
          spdlog::warn("query history: {} records not sent upstream at shutdown", left);
      },
      [](caf::error&) {
        spdlog::warn("query history: the final flush upstream did not finish in time");
      });
}

void node::flush_history(std::chrono::milliseconds timeout) {
  auto store = services_->history_store;
  if (!store)
    return;
  caf::scoped_actor self{*services_->sys};
  self->request(store, timeout, atom::flush::value)
    .receive(
      [](uint64_t left) {
        if (left > 0)
          spdlog::warn("query history: {} records not written at shutdown", left);
      },
      [](caf::error&) { spdlog::warn("query history: the final flush timed out"); });
}

void node::announce_drain(std::chrono::milliseconds timeout) {
  auto link = services_->control_plane;
  if (!link)
    return;
  caf::scoped_actor self{*services_->sys};
  self->request(link, timeout, atom::drain::value)
    .receive([](atom::ok) {},
             [](caf::error&) { spdlog::warn("the control plane did not hear the drain"); });
}

void node::release_capacity(std::chrono::milliseconds timeout) {
  auto leases = services_->capacity;
  if (!leases)
    return;
  caf::scoped_actor self{*services_->sys};
  self->request(leases, timeout, atom::drain::value)
    .receive([](atom::ok) {},
             [](caf::error&) {
               spdlog::warn("the control plane did not hear that this worker's leases are "
                            "free: they expire with their TTL");
             });
}

void node::release_sweep_lock(std::chrono::milliseconds timeout) {
  auto reconciler = services_->reconciler;
  if (!reconciler)
    return;
  caf::scoped_actor self{*services_->sys};
  self->request(reconciler, timeout, atom::drain::value)
    .receive([](atom::ok) {},
             [](caf::error&) {
               spdlog::warn("the engine-reconcile lock was not given back: it expires "
                            "with its TTL");
             });
}

void node::elect_lease_owner(const std::string& url) {
  if (database_url_.empty())
    return;
  lease_owner_settings electing;
  electing.database_url = database_url_;
  electing.replica = replica_name_;
  electing.advertise_url = url;
  electing.table = services_->lease_table;
  auto election = services_->sys->spawn<caf::detached>(lease_owner, std::move(electing));
  actors_.push_back(caf::actor_cast<caf::actor>(election));
}

void node::stop() {
  // The snapshot holder ends the fleet's actors with it.
  for (auto& a : actors_)
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  actors_.clear();
  services_->snapshot->store(nullptr);
}

} // namespace qf
