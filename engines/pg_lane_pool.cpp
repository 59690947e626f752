#include "engines/pg_lane_pool.hpp"

#include "engines/pg_async_connection.hpp"

namespace qf::engines {

pg_lane_pool::pg_lane_pool(std::string conninfo, uint32_t max_idle)
  : conninfo_(std::move(conninfo)), max_idle_(max_idle) {
  // nop
}

pg_lane_pool::~pg_lane_pool() = default;

std::shared_ptr<pg_async_connection> pg_lane_pool::take() {
  auto now = std::chrono::steady_clock::now();
  for (;;) {
    idle_connection idle;
    {
      std::lock_guard guard{mtx_};
      if (idle_.empty())
        return nullptr;
      idle = std::move(idle_.back());
      idle_.pop_back();
    }
    // The check costs a system call: under load a connection comes back
    // microseconds after it went, with nothing to hear in between.
    if (now - idle.since < quiet_check_after || idle.conn->quiet())
      return std::move(idle.conn);
  }
}

void pg_lane_pool::give_back(std::shared_ptr<pg_async_connection> conn) {
  if (!conn || !conn->reusable())
    return;
  std::lock_guard guard{mtx_};
  if (!retired_ && idle_.size() < max_idle_)
    idle_.push_back({std::move(conn), std::chrono::steady_clock::now()});
}

void pg_lane_pool::retire() {
  std::vector<idle_connection> closing;
  std::lock_guard guard{mtx_};
  retired_ = true;
  closing.swap(idle_);
}

} // namespace qf::engines
