// A cluster's slots on one node, in one atomic word so that admission and
// a change of the node's grant never race: the low half counts the
// queries running, the high half how many this node may run. The grant is
// unbounded unless the node shares its clusters' limits with a fleet
// (coordination.mode: controlPlane on a worker), where it is what the
// control plane leased to it.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace qf {

class slot_counter {
public:
  static constexpr uint32_t unbounded = UINT32_MAX;

  enum class outcome { taken, full, needs_grant };

  uint32_t running() const {
    return low(word_.load());
  }

  uint32_t granted() const {
    return high(word_.load());
  }

  /// One slot, if the limit and the grant both have room.
  outcome try_take(uint32_t limit) {
    auto w = word_.load();
    for (;;) {
      if (low(w) >= limit)
        return outcome::full;
      if (low(w) >= high(w))
        return outcome::needs_grant;
      if (word_.compare_exchange_weak(w, w + 1))
        return outcome::taken;
    }
  }

  /// Up to n slots under the limit (the grant is not looked at): how many.
  uint32_t take_up_to(uint32_t n, uint32_t limit) {
    auto w = word_.load();
    for (;;) {
      auto room = low(w) >= limit ? 0 : std::min(n, limit - low(w));
      if (room == 0 || word_.compare_exchange_weak(w, w + room))
        return room;
    }
  }

  /// n slots whatever the limit: queries a worker already runs, counted
  /// again after an outage. Nobody is admitted until the count is back
  /// under the limit.
  void force_take(uint32_t n) {
    word_.fetch_add(n);
  }

  /// n slots back (never more than were taken). A bounded grant above the
  /// cap goes down with them, in the same step: a slot the node owes the
  /// fleet is not taken by the node's next query first.
  void give(uint32_t n) {
    auto cap = cap_.load();
    auto w = word_.load();
    for (;;) {
      auto running = low(w) - n;
      uint64_t grant = high(w);
      if (grant != unbounded && grant > cap)
        grant = std::max<uint64_t>({cap, running, grant - n});
      if (word_.compare_exchange_weak(w, pack(running, grant)))
        return;
    }
  }

  /// A worker's acquire waits for a slot here: the next slot given back
  /// through the cluster tells the lease table, once. Set before the
  /// waiter looks at the count, so a slot freed in between is never missed.
  void want_wake() {
    wake_.store(true);
  }

  /// Whether a waiter asked to hear of the slot just given back (asked
  /// once, told once).
  bool take_wake() {
    return wake_.load() && wake_.exchange(false);
  }

  /// While others wait for the cluster: the node's fair share, which a
  /// slot given back brings the grant down to (unbounded: no cap).
  void set_cap(uint32_t n) {
    cap_.store(n);
  }

  /// The grant goes up by n (a bounded one; unbounded stays).
  void raise_grant(uint32_t n) {
    auto w = word_.load();
    while (high(w) != unbounded
           && !word_.compare_exchange_weak(w, pack(low(w), std::min<uint64_t>(
                                                              uint64_t{high(w)} + n,
                                                              unbounded - 1))))
      ;
  }

  /// Lowers the grant to `target`, but never below the queries running:
  /// how far it went down (an unbounded grant is left as it is: 0).
  uint32_t shrink_grant(uint32_t target) {
    auto w = word_.load();
    for (;;) {
      if (high(w) == unbounded)
        return 0;
      auto to = std::max(target, low(w));
      if (to >= high(w))
        return 0;
      if (word_.compare_exchange_weak(w, pack(low(w), to)))
        return high(w) - to;
    }
  }

  /// Sets the grant: unbounded (local limits only), 0 (no new query) or
  /// the queries running (what the node tells the control plane it holds
  /// after an outage); returns the queries running at that moment.
  uint32_t set_grant(uint32_t g) {
    auto w = word_.load();
    while (!word_.compare_exchange_weak(w, pack(low(w), g)))
      ;
    return low(w);
  }

  /// The grant becomes exactly the queries running; returns it.
  uint32_t grant_running() {
    auto w = word_.load();
    while (!word_.compare_exchange_weak(w, pack(low(w), low(w))))
      ;
    return low(w);
  }

private:
  static uint32_t low(uint64_t w) {
    return static_cast<uint32_t>(w);
  }
  static uint32_t high(uint64_t w) {
    return static_cast<uint32_t>(w >> 32);
  }
  static uint64_t pack(uint32_t running, uint64_t grant) {
    return (grant << 32) | running;
  }

  std::atomic<uint64_t> word_{pack(0, unbounded)};
  std::atomic<uint32_t> cap_{unbounded};
  std::atomic<bool> wake_{false};
};

} // namespace qf
