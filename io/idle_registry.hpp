// A listener's open connections, to find the one idle the longest when a
// newcomer arrives at maxConnections (as nginx reuses keep-alive
// connections): the HTTP ports and the wire ports share it. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace qf::io {

/// A connection a listener may close to make room.
class evictable {
public:
  virtual ~evictable() = default;

  /// Closes the connection if it is still idle (on its own thread).
  virtual void evict() = 0;

  /// Since when it is idle (steady ms); 0 while it is busy, or once
  /// chosen to go.
  std::atomic<int64_t> idle_since_ms{0};
  /// Whose client logged in: those that did not go first (they hold
  /// nobody's session, and a flood of half-open logins is what they are),
  /// then the others, each the longest idle first.
  std::atomic<bool> logged_in{false};

  static int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
  }
};

class idle_registry {
public:
  using entry = std::list<std::weak_ptr<evictable>>::iterator;

  entry add(std::weak_ptr<evictable> c) {
    std::lock_guard guard{mtx_};
    return open_.insert(open_.end(), std::move(c));
  }

  void remove(entry at) {
    std::lock_guard guard{mtx_};
    open_.erase(at);
  }

  /// Closes the connection idle the longest, one not logged in before
  /// any that is; false when none is idle.
  bool evict_longest_idle() {
    // Every connection looked at stays held until the lock is let go:
    // should one of these be its last reference, its destructor takes
    // the lock.
    std::vector<std::shared_ptr<evictable>> seen;
    evictable* oldest = nullptr;
    int64_t since = 0;
    bool oldest_logged_in = false;
    {
      std::lock_guard guard{mtx_};
      seen.reserve(open_.size());
      for (const auto& w : open_) {
        auto c = w.lock();
        if (!c)
          continue;
        auto t = c->idle_since_ms.load();
        bool in = c->logged_in.load();
        if (t != 0 && (!oldest || std::pair{in, t} < std::pair{oldest_logged_in, since})) {
          oldest = c.get();
          since = t;
          oldest_logged_in = in;
        }
        seen.push_back(std::move(c));
      }
      // Chosen: nobody else picks it, and it goes unless busy meanwhile.
      if (!oldest || !oldest->idle_since_ms.compare_exchange_strong(since, 0))
        oldest = nullptr;
    }
    if (!oldest)
      return false;
    oldest->evict();
    return true;
  }

private:
  std::mutex mtx_;
  std::list<std::weak_ptr<evictable>> open_;
};

} // namespace qf::io
