// The SWEEP LOCKS a lease table keeps (POST /worker/sweep-lock/*): named
// locks with a time to live, each with the counts its holders publish.
// One node at a time holds "engine-reconcile" and asks the engines for
// their running counts; every node reads what it published. A grant's
// fencing token only grows (it starts from the wall clock, so a replica
// taking the table over does not give a token again); a release or a
// publish must show the holder's name and current token. Plain data, the
// time passed in: the lease table's actor owns it, and tests drive it
// with a clock of their own.
#pragma once

#include "protocols/worker_api/sweep_lock.hpp"

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <variant>

namespace qf {

class sweep_locks {
public:
  using time_point = std::chrono::steady_clock::time_point;

  /// A release or publish from a node that does not hold the lock (never
  /// did, or it expired and another took it): nothing changes.
  struct not_held {
    std::string message;
  };

  explicit sweep_locks(uint64_t first_token);

  /// Grants the lock when it is free, expired or already the caller's (its
  /// TTL starts again, its token stays); otherwise says who holds it.
  worker_api::sweep_answer acquire(const worker_api::sweep_call& c, time_point now);

  std::variant<worker_api::sweep_answer, not_held> release(const worker_api::sweep_call& c,
                                                           time_point now);

  /// Stores the counts of clusters in `known` (others are left out: the
  /// publisher's config may be a revision ahead or behind) and answers
  /// with every count published under the lock.
  std::variant<worker_api::sweep_answer, not_held>
  publish(const worker_api::sweep_call& c, const std::set<std::string>& known, time_point now);

  /// Every count published under the lock, with its age.
  worker_api::sweep_answer counts(const std::string& name, time_point now) const;

  /// Counts older than this are no longer given.
  static constexpr std::chrono::minutes forget_after{10};

private:
  struct lock {
    std::string holder;
    uint64_t token = 0;
    time_point expires;
  };
  struct published {
    uint32_t running = 0;
    std::string publisher;
    time_point at;
  };

  std::variant<const lock*, not_held> held_by_caller(const worker_api::sweep_call& c,
                                                     time_point now) const;

  uint64_t next_token_;
  std::map<std::string, lock> locks_;
  /// By lock, then cluster.
  std::map<std::string, std::map<std::string, published>> counts_;
};

} // namespace qf
