// Studio sessions logged out before they expire: a node's own logouts and,
// with PostgreSQL, every replica's (studio_revocations keeps them in step
// with the table). Thread-safe; read on every request that carries a
// session cookie.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace qf {

class revoked_sessions {
public:
  /// `expires_at`: seconds since the epoch, when the session would end.
  void add(const std::string& id, int64_t expires_at) {
    std::lock_guard guard{mtx_};
    ids_[id] = expires_at;
  }

  /// Adds what the table holds, and forgets the expired (at `now`).
  void merge(const std::map<std::string, int64_t>& stored, int64_t now) {
    std::lock_guard guard{mtx_};
    for (const auto& [id, expires_at] : stored)
      ids_[id] = expires_at;
    std::erase_if(ids_, [now](const auto& r) { return r.second <= now; });
  }

  bool contains(const std::string& id) const {
    std::lock_guard guard{mtx_};
    return ids_.count(id) > 0;
  }

private:
  mutable std::mutex mtx_;
  std::map<std::string, int64_t> ids_;
};

} // namespace qf
