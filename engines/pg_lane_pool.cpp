#include "engines/pg_lane_pool.hpp"

#include "engines/pg_async_connection.hpp"

namespace qf::engines {

pg_lane_pool::pg_lane_pool(std::string conninfo, uint32_t max_idle)
  : conninfo_(std::move(conninfo)), max_idle_(max_idle) {
  // nop
}

pg_lane_pool::~pg_lane_pool() = default;

std::shared_ptr<pg_async_connection> pg_lane_pool::take() {
  std::shared_ptr<pg_async_connection> conn;
  while (!conn || !conn->quiet()) {
    std::lock_guard guard{mtx_};
    if (idle_.empty())
      return nullptr;
    conn = std::move(idle_.back());
    idle_.pop_back();
  }
  return conn;
}

void pg_lane_pool::give_back(std::shared_ptr<pg_async_connection> conn) {
  if (!conn || !conn->reusable())
    return;
  std::lock_guard guard{mtx_};
  if (!retired_ && idle_.size() < max_idle_)
    idle_.push_back(std::move(conn));
}

void pg_lane_pool::retire() {
  std::vector<std::shared_ptr<pg_async_connection>> closing;
  std::lock_guard guard{mtx_};
  retired_ = true;
  closing.swap(idle_);
}

} // namespace qf::engines
