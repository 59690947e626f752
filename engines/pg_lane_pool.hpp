// A PostgreSQL cluster's idle non-blocking connections, kept for the next
// statement of any session. Free of Asio, so that the cluster state which
// owns it can be shared with the actors.
#pragma once

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

  /// An idle connection, or null: the caller opens one.
  std::shared_ptr<pg_async_connection> take();

  /// Keeps the connection if it is fit for reuse and there is room;
  /// otherwise it closes.
  void give_back(std::shared_ptr<pg_async_connection> conn);

  /// The cluster was replaced or deleted: close the idle connections and
  /// keep none from now on.
  void retire();

private:
  const std::string conninfo_;
  const uint32_t max_idle_;
  std::mutex mtx_;
  std::vector<std::shared_ptr<pg_async_connection>> idle_;
  bool retired_ = false;
};

} // namespace qf::engines
