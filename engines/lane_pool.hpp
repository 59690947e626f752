// A cluster's idle non-blocking connections, kept for the next statement
// of any session on the wire fast lane: PostgreSQL's (pg_async_connection)
// and MySQL's (mysql_async_connection). Free of Asio, so that the cluster
// state which owns it can be shared with the actors.
#pragma once

#include "engines/lane_pool_fwd.hpp"
#include "io/round_clock.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace qf::engines {

/// Connection: reusable() (idle and sound) and quiet() (nothing arrived
/// while idle); Target: what a new one is opened with.
template <class Connection, class Target>
class lane_pool {
public:
  lane_pool(Target target, uint32_t max_idle) : target_(std::move(target)), max_idle_(max_idle) {
    // nop
  }

  lane_pool(const lane_pool&) = delete;
  lane_pool& operator=(const lane_pool&) = delete;

  const Target& target() const {
    return target_;
  }

  /// An idle connection, or null: the caller opens one. One idle for
  /// longer than quiet_check_after is first checked for a word from the
  /// server (a restart, a terminated backend) and dropped if it had one;
  /// one idle for less is handed over unchecked, as pgbouncer reuses a
  /// connection within server_check_delay (30 s there).
  std::shared_ptr<Connection> take() {
    auto now = io::round_clock::steady();
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

  static constexpr std::chrono::milliseconds quiet_check_after{100};

  /// Keeps the connection if it is fit for reuse and there is room;
  /// otherwise it closes.
  void give_back(std::shared_ptr<Connection> conn) {
    if (!conn || !conn->reusable())
      return;
    std::lock_guard guard{mtx_};
    if (!retired_ && idle_.size() < max_idle_)
      idle_.push_back({std::move(conn), io::round_clock::steady()});
  }

  /// The cluster was replaced or deleted: close the idle connections and
  /// keep none from now on.
  void retire() {
    std::vector<idle_connection> closing;
    std::lock_guard guard{mtx_};
    retired_ = true;
    closing.swap(idle_);
  }

private:
  const Target target_;
  const uint32_t max_idle_;
  struct idle_connection {
    std::shared_ptr<Connection> conn;
    std::chrono::steady_clock::time_point since;
  };

  std::mutex mtx_;
  std::vector<idle_connection> idle_;
  bool retired_ = false;
};

} // namespace qf::engines
