// A listener's open connections, to find the one idle the longest when a
// newcomer arrives at maxConnections (as nginx reuses keep-alive
// connections): the HTTP ports and the wire ports share it. Idle
// connections wait in two lists in the order they became idle, those whose
// client never logged in apart from the others, so the choice is the front
// of one of them and costs the same however many connections are open.
// Thread-safe; a wire listener keeps one per event loop, so that its
// connections' comings and goings take an uncontended lock.
#pragma once

#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>

namespace qf::io {

/// A connection a listener may close to make room.
class evictable {
public:
  virtual ~evictable() = default;

  /// Closes the connection if it is still idle (on its own thread).
  virtual void evict() = 0;
};

class idle_registry {
public:
  /// Where a connection stands: busy, or idle with or without a client
  /// that logged in. Those that never logged in go first (they hold
  /// nobody's session, and a flood of half-open logins is what they are),
  /// then the others, each the longest idle first.
  enum class standing { busy, idle_anonymous, idle_logged_in };

private:
  struct member {
    std::weak_ptr<evictable> who;
    standing where = standing::busy;
    int64_t since_ms = 0; // when it came to where it stands
  };

public:
  using entry = std::list<member>::iterator;

  static int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
  }

  /// A new connection, idle (nothing asked yet) from now.
  entry join(std::weak_ptr<evictable> who) {
    std::lock_guard guard{mtx_};
    auto& idle = list(standing::idle_anonymous);
    return idle.insert(idle.end(), member{std::move(who), standing::idle_anonymous, now_ms()});
  }

  /// Moves a connection to the back of where it stands now (nothing when
  /// it stands there already: its time there goes on).
  void stand(entry e, standing where) {
    std::lock_guard guard{mtx_};
    if (e->where == where)
      return;
    list(where).splice(list(where).end(), list(e->where), e);
    e->where = where;
    e->since_ms = now_ms();
  }

  void leave(entry e) {
    std::lock_guard guard{mtx_};
    list(e->where).erase(e);
  }

  /// The longest idle here, as (logged in, idle since): for comparing
  /// the front of several registries.
  std::optional<std::pair<bool, int64_t>> longest_idle() {
    std::lock_guard guard{mtx_};
    for (auto where : {standing::idle_anonymous, standing::idle_logged_in})
      if (!list(where).empty())
        return std::pair{where == standing::idle_logged_in, list(where).front().since_ms};
    return std::nullopt;
  }

  /// Takes the longest idle connection off the idle lists (it counts as
  /// busy until it says otherwise) and returns it; null when none is idle.
  std::shared_ptr<evictable> claim_longest_idle() {
    std::shared_ptr<evictable> chosen;
    std::lock_guard guard{mtx_};
    for (auto where : {standing::idle_anonymous, standing::idle_logged_in}) {
      auto& idle = list(where);
      while (!idle.empty()) {
        auto e = idle.begin();
        list(standing::busy).splice(list(standing::busy).end(), idle, e);
        e->where = standing::busy;
        // A connection in its destructor is on its way out by itself; its
        // last reference may not be let go here, under the lock it takes.
        if ((chosen = e->who.lock()))
          return chosen;
      }
    }
    return nullptr;
  }

  /// Closes the longest idle connection of these registries; false when
  /// none is idle.
  static bool evict_longest_idle(std::span<idle_registry* const> registries) {
    for (;;) {
      idle_registry* best = nullptr;
      std::pair<bool, int64_t> key{};
      for (auto* r : registries)
        if (auto k = r->longest_idle(); k && (!best || *k < key)) {
          best = r;
          key = *k;
        }
      if (!best)
        return false;
      // Another may have claimed its front meanwhile; whatever is idle
      // there now goes, or the next registry is looked at.
      if (auto c = best->claim_longest_idle()) {
        c->evict();
        return true;
      }
    }
  }

  bool evict_longest_idle() {
    idle_registry* self = this;
    return evict_longest_idle(std::span{&self, 1});
  }

private:
  std::list<member>& list(standing where) {
    return lists_[static_cast<int>(where)];
  }

  std::mutex mtx_;
  std::list<member> lists_[3];
};

} // namespace qf::io
