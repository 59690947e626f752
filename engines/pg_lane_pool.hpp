// A PostgreSQL cluster's idle non-blocking connections, kept for the next
// statement of any session. Free of Asio, so that the cluster state which
// owns it can be shared with the actors.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace qf::engines {

class pg_async_connection;

class pg_lane_pool {
public:
  pg_lane_pool(std::string conninfo, uint32_t max_idle);
  ~pg_lane_pool();

  pg_lane_pool(const pg_lane_pool&) = delete;
  pg_lane_pool& operator=(const pg_lane_pool&) = delete;

  const std::string& conninfo() const {
    return conninfo_;
  }

  /// An idle connection, or null: the caller opens one. One idle for
  /// longer than quiet_check_after is first checked for a word from the
  /// server (a restart, a terminated backend) and dropped if it had one;
  /// one idle for less is handed over unchecked, as pgbouncer reuses a
  /// connection within server_check_delay (30 s there).
  std::shared_ptr<pg_async_connection> take();

  static constexpr std::chrono::milliseconds quiet_check_after{100};

  /// Keeps the connection if it is fit for reuse and there is room;
  /// otherwise it closes.
  void give_back(std::shared_ptr<pg_async_connection> conn);

  /// The cluster was replaced or deleted: close the idle connections and
  /// keep none from now on.
  void retire();

private:
  const std::string conninfo_;
  const uint32_t max_idle_;
  struct idle_connection {
    std::shared_ptr<pg_async_connection> conn;
    std::chrono::steady_clock::time_point since;
  };

  std::mutex mtx_;
  std::vector<idle_connection> idle_;
  bool retired_ = false;
};

} // namespace qf::engines
