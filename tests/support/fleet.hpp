// An in-process fleet for worker-mode tests: a control plane (on a fresh
// database of the PostgreSQL server the test command starts, or in memory)
// and N workers, each a node of its own (its own actor system, io_context and
// metrics), talking over loopback HTTP through a link_proxy per worker that
// a test can cut, restore and tamper with.
#pragma once

#include "engines/http_client.hpp"
#include "net/server.hpp"
#include "tests/support/link_proxy.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace qf::test_support {

using namespace std::chrono_literals;

/// Checks pred every 20 ms until it holds; false when `limit` passes first.
/// The limit only guards against a hang: nothing passes by waiting.
template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = 30s) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

constexpr const char* fleet_secret = "fleet-test-secret-0123456789";

struct control_plane_options {
  /// The fleet sections (clusters, clusterGroups, routers...) of its file.
  std::string fleet_yaml;
  /// A database URL (migrated and seeded at start); "" keeps the fleet in
  /// memory (a standalone serving workers).
  std::string database_url;
  /// Extra lines under queryflux: (indented by two spaces).
  std::string node_yaml;
  /// More of workerApi's members, after sharedSecret ("history: {...}").
  std::string worker_api_yaml{};
  /// The lease table's grace after start: none unless a test asks.
  caf::timespan lease_grace{0};
};

struct worker_options {
  std::string name;
  uint32_t poll_timeout_secs = 30;
  uint32_t heartbeat_interval_secs = 10;
  /// Extra lines under queryflux.controlPlane: (peerBootstrap...).
  std::string control_plane_yaml;
  /// Where its listeners bind, and its ops port (0: any).
  std::string address = "127.0.0.1";
  uint16_t ops_port = 0;
  bool postgres_wire = false;
  bool mysql_wire = false;
  /// Extra lines under queryflux: (coordination...).
  std::string node_yaml;
  /// A transport for its link in place of the real client (peer address
  /// resolution); null: the real one.
  std::shared_ptr<http_transport> transport;
  /// The admin port of the control plane (or replica) its link leads to;
  /// 0: the fleet's control plane.
  uint16_t control_plane_port = 0;
};

/// A worker of that name with the defaults, to set more fields on.
inline worker_options worker_named(std::string name, uint32_t heartbeat_interval_secs = 10) {
  worker_options o;
  o.name = std::move(name);
  o.heartbeat_interval_secs = heartbeat_interval_secs;
  return o;
}

struct http_answer {
  int status = 0;
  std::string body;
  nlohmann::json json() const {
    return nlohmann::json::parse(body, nullptr, false);
  }
};

/// One request with the blocking client the engines use.
http_answer http_request(const std::string& method, const std::string& url,
                         engines::http_headers headers = {}, std::string body = {});

/// Runs sql over Trino HTTP on host:port (POST, then nextUri to the end):
/// the rows as JSON, or the error's message as a string.
nlohmann::json trino_query(uint16_t port, const std::string& sql,
                           const std::string& host = "127.0.0.1");

class fleet {
public:
  explicit fleet(control_plane_options cp);
  ~fleet();

  fleet(const fleet&) = delete;
  fleet& operator=(const fleet&) = delete;

  server& control_plane() {
    return *control_plane_;
  }

  /// Stops the control plane (its port stays reserved for the restart).
  void stop_control_plane();
  /// Starts it again on the same admin port, from the same file.
  void start_control_plane();

  /// A second control plane on the same database (a replica), with the
  /// same lease grace.
  std::unique_ptr<server> replica() const;

  size_t add_worker(worker_options opts);
  /// Ends worker i abruptly, as kill -9 would: its leases are not given
  /// back, its listeners go (its proxy stays).
  void kill_worker(size_t i);
  /// Stops and removes worker i's node (its proxy stays).
  void stop_worker(size_t i);
  /// Whether worker i runs (not killed or stopped).
  bool alive(size_t i) const {
    return workers_.at(i).node != nullptr;
  }
  server& worker(size_t i) {
    return *workers_.at(i).node;
  }
  link_proxy& link(size_t i) {
    return *workers_.at(i).link;
  }
  size_t size() const {
    return workers_.size();
  }

  /// The admin API of the control plane (admin:admin).
  http_answer admin(const std::string& method, const std::string& path, std::string body = {});
  /// The worker API of a control plane, with the fleet's secret.
  http_answer worker_api(const std::string& path, uint16_t admin_port = 0);
  /// GET /worker/status of worker i.
  nlohmann::json status(size_t i);
  /// The revision the control plane serves.
  std::string served_revision(uint16_t admin_port = 0);

private:
  struct worker_slot {
    worker_options opts;
    std::unique_ptr<link_proxy> link;
    std::unique_ptr<server> node;
  };

  control_plane_options cp_;
  std::string cp_yaml_;
  uint16_t cp_port_ = 0;
  std::unique_ptr<server> control_plane_;
  std::vector<worker_slot> workers_;
};

} // namespace qf::test_support
