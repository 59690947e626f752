// A cluster's idle non-blocking connections, kept for the next statement
// of any session on the wire fast lane: PostgreSQL's (pg_async_connection)
// and MySQL's (mysql_async_connection). Each is served by one wire
// thread's loop; a session takes one of its own loop's, or has one moved
// over. Free of Asio, so that the cluster state which owns it can be
// shared with the actors.
#pragma once

#include "engines/lane_pool_fwd.hpp"
#include "io/event_loop.hpp"
#include "io/round_clock.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace qf::engines {

/// Connection: poolable() (idle, sound, no client's state), quiet() (nothing arrived
/// while idle), loop(), leave_loop()/join_loop() and a static open();
/// Target: what a new one is opened with.
template <class Connection, class Target>
class lane_pool {
public:
  lane_pool(Target target, uint32_t max_idle) : target_(std::move(target)), max_idle_(max_idle) {
    // nop
  }

  lane_pool(const lane_pool&) = delete;
  lane_pool& operator=(const lane_pool&) = delete;

  /// An idle connection served on `loop` (the caller's), or null: the
  /// caller fetch()es one. One idle for longer than quiet_check_after is
  /// first checked for a word from the server (a restart, a terminated
  /// backend) and dropped if it had one; one idle for less is handed over
  /// unchecked, as pgbouncer reuses a connection within
  /// server_check_delay (30 s there).
  std::shared_ptr<Connection> take(const io::event_loop& loop) {
    return take(loop, [](const Connection&) { return true; });
  }

  /// take(), preferring an idle connection that `prefers` (one that has
  /// its session's settings already: no replay before its statement).
  template <class Prefers>
  std::shared_ptr<Connection> take(const io::event_loop& loop, Prefers prefers) {
    return take(loop, prefers, true);
  }

  /// Only an idle connection that `wanted` says is the one, or null.
  template <class Wanted>
  std::shared_ptr<Connection> take_only(const io::event_loop& loop, Wanted wanted) {
    return take(loop, wanted, false);
  }

  static constexpr std::chrono::milliseconds quiet_check_after{100};

  /// A connection of `loop`'s that runs statements and takes more behind
  /// them (PostgreSQL's pipelining: those `fits` says it takes), or null.
  /// Only `loop`'s own are looked at: each is touched on its loop's thread
  /// alone, and leaves the list before it can move to another loop
  /// (give_back()).
  template <class Fits>
  std::shared_ptr<Connection> join(const io::event_loop& loop, Fits fits) {
    std::lock_guard guard{mtx_};
    auto listed = running_.find(&loop);
    if (listed == running_.end())
      return nullptr;
    auto& conns = listed->second;
    for (auto it = conns.begin(); it != conns.end();) {
      auto conn = it->lock();
      if (!conn || !conn->pipelining()) {
        it = conns.erase(it);
        continue;
      }
      if (fits(*conn))
        return conn;
      ++it;
    }
    return nullptr;
  }

  /// `conn`, which runs on its loop, takes statements behind its running
  /// one (join()) while it pipelines.
  void joinable(const std::shared_ptr<Connection>& conn) {
    std::lock_guard guard{mtx_};
    auto& conns = running_[&conn->loop()];
    bool listed = std::any_of(conns.begin(), conns.end(), [&](const std::weak_ptr<Connection>& w) {
      return !w.owner_before(conn) && !conn.owner_before(w);
    });
    if (!listed)
      conns.push_back(conn);
  }

  /// With none of `loop`'s own idle (take() said null): one idle on
  /// another loop, moved to `loop`, else a new one. `done` runs on
  /// `loop`'s thread, with the connection or null and why. Moved rather
  /// than opened, a client that connects per statement costs no backend
  /// connection per statement, whichever wire thread it lands on.
  template <class Done> // Connection::opened, which needs the whole type
  void fetch(io::event_loop& loop, Done done) {
    auto moving = take_last([&](const Connection& c) { return &c.loop() != &loop; }).conn;
    if (!moving)
      return Connection::open(target_, loop, std::move(done));
    auto& from = moving->loop();
    from.post([conn = std::move(moving), to = loop.shared_from_this(), target = target_,
               done = std::move(done)]() mutable {
      conn->leave_loop();
      auto& next = *to;
      next.post([conn = std::move(conn), to = std::move(to), target = std::move(target),
                 done = std::move(done)]() mutable {
        if (conn->join_loop(*to) && conn->quiet())
          return done(std::move(conn), {});
        conn.reset(); // it closes here, on the loop it joined
        Connection::open(target, *to, std::move(done));
      });
    });
  }

  /// Keeps the connection if it is fit for reuse and there is room;
  /// otherwise it closes.
  void give_back(std::shared_ptr<Connection> conn) {
    if (!conn || !conn->poolable())
      return;
    std::lock_guard guard{mtx_};
    unlist(*conn); // it may move to another loop from here
    if (!retired_ && idle_.size() < max_idle_)
      idle_.push_back({std::move(conn), io::round_clock::steady()});
  }

  /// The cluster was replaced or deleted: close the idle connections and
  /// keep none from now on.
  void retire() {
    std::vector<idle_connection> closing;
    {
      std::lock_guard guard{mtx_};
      retired_ = true;
      closing.swap(idle_);
      running_.clear();
    }
    for (auto& idle : closing)
      close_on_its_loop(std::move(idle.conn));
  }

private:
  template <class Prefers>
  std::shared_ptr<Connection> take(const io::event_loop& loop, Prefers prefers, bool or_any) {
    auto now = io::round_clock::steady();
    bool preferred = true;
    for (;;) {
      auto idle = take_last([&](const Connection& c) {
        return &c.loop() == &loop && (!preferred || prefers(c));
      });
      if (!idle.conn && or_any && std::exchange(preferred, false))
        continue; // none it prefers: any
      if (!idle.conn)
        return nullptr;
      // The check costs a system call: under load a connection comes back
      // microseconds after it went, with nothing to hear in between.
      if (now - idle.since < quiet_check_after || idle.conn->quiet())
        return std::move(idle.conn);
    }
  }


  struct idle_connection {
    std::shared_ptr<Connection> conn;
    std::chrono::steady_clock::time_point since;
  };

  /// The idle connection returned last of those that `fits`: its backend
  /// is the warmest.
  template <class Fits>
  idle_connection take_last(Fits fits) {
    std::lock_guard guard{mtx_};
    auto it = std::find_if(idle_.rbegin(), idle_.rend(),
                           [&](const idle_connection& c) { return fits(*c.conn); });
    if (it == idle_.rend())
      return {};
    auto idle = std::move(*it);
    idle_.erase(std::next(it).base());
    return idle;
  }

  /// Off the list of `conn`'s loop's pipelining connections (mtx_ held).
  void unlist(const Connection& conn) {
    if constexpr (requires { conn.pipelining(); }) {
      auto listed = running_.find(&conn.loop());
      if (listed == running_.end())
        return;
      std::erase_if(listed->second, [&](const std::weak_ptr<Connection>& w) {
        auto c = w.lock();
        return !c || c.get() == &conn;
      });
    }
  }

  /// A connection is only touched on its loop's thread, its end included.
  static void close_on_its_loop(std::shared_ptr<Connection> conn) {
    auto& loop = conn->loop();
    loop.post([conn = std::move(conn)] {});
  }

  const Target target_;
  const uint32_t max_idle_;

  std::mutex mtx_;
  std::vector<idle_connection> idle_;
  // Per loop, its connections that pipeline (join()), while they do.
  std::unordered_map<const io::event_loop*, std::vector<std::weak_ptr<Connection>>> running_;
  bool retired_ = false;
};

} // namespace qf::engines
