// One running QueryFlux node with its listeners: the actor system, the node's
// actors, the HTTP ports (Trino, admin or a worker's ops port) and the wire
// ports. `queryflux serve` runs one per process; tests run a control plane
// and fifty workers in one process, each a server of its own with no state
// shared between them.
#pragma once

#include "actors/node/node.hpp"
#include "net/startup_database.hpp"

#include <chrono>
#include <cstdint>
#include <memory>

namespace qf {

struct server_options {
  /// Where every listener binds.
  std::string address = "0.0.0.0";
  /// CAF scheduler threads; 0: as many as the cores (at least four).
  size_t actor_threads = 0;
  unsigned http_threads = 2;
  /// A worker's way to its control plane and peers; null: net/http/client.
  std::shared_ptr<http_transport> worker_transport;
  node_options node;
};

class server {
public:
  /// Starts the node and binds every listener the config enables (a port
  /// of 0 binds one the system chooses); throws std::runtime_error when a
  /// port is taken or a file (TLS, CA) cannot be read.
  explicit server(startup::served_config served, server_options opts = {});
  ~server();

  server(const server&) = delete;
  server& operator=(const server&) = delete;

  std::shared_ptr<node_services> services() const;

  /// The ports bound (0 for a listener that is off).
  uint16_t trino_port() const;
  uint16_t admin_port() const;
  uint16_t postgres_port() const;
  uint16_t mysql_port() const;

  /// SIGTERM: new queries are refused, running ones finish (up to
  /// shutdownDrainTimeoutSecs), a worker tells its control plane, the last
  /// pages are sent. Then stop().
  void drain();

  /// Ends everything; idempotent.
  void stop();

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// A worker's name: workerName, else the host name.
std::string worker_name_of(const config::node& q);

/// workerLabels with the labels file's merged over them (its problems
/// logged: a pod's labels are not worth refusing to start for).
std::map<std::string, std::string> worker_labels_of(const config::node& q);

} // namespace qf
