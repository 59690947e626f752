// The lease table's record in PostgreSQL (actors/control/lease_owner.hpp):
// the owner writes what it counts there, a follower reads who holds what
// from it.
#include "actors/control/lease_table.hpp"

#include "actors/node/node.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <map>
#include <spdlog/spdlog.h>

namespace qf {

namespace {

using self_ptr = lease_table_actor::stateful_pointer<lease_table_state>;

/// What the owner counts, per holder and cluster (its own queries under
/// its replica name), as the record should hold it.
std::vector<lease_row> counted(self_ptr self) {
  auto& st = self->state;
  std::vector<lease_row> rows;
  std::map<std::string, uint32_t> leased;
  for (const auto& [name, s] : st.sessions)
    for (const auto& [cluster, h] : s.held)
      if (h.count > 0) {
        rows.push_back({name, cluster, h.count, s.ttl_secs, 0});
        leased[cluster] += h.count;
      }
  if (auto active = st.cfg.cell->load())
    for (const auto& [name, c] : active->clusters) {
      auto running = c->running();
      if (running > leased[name])
        rows.push_back({st.cfg.replica, name, running - leased[name], st.cfg.own_ttl_secs, 0});
    }
  return rows;
}

} // namespace

void write_record(self_ptr self) {
  auto& st = self->state;
  if (st.writing || !st.record)
    return;
  auto rows = counted(self);
  if (rows == st.last_written)
    return;
  st.writing = true;
  self->request(st.record, std::chrono::seconds(10), atom::put::value, rows)
    .then(
      [self, rows](atom::ok) {
        self->state.writing = false;
        self->state.last_written = rows;
        self->state.record_failing = false;
      },
      [self](caf::error& err) {
        self->state.writing = false;
        if (!std::exchange(self->state.record_failing, true))
          spdlog::warn("lease table: the record is not written ({}); trying again",
                       message_of(err));
      });
}

caf::result<std::vector<lease_holder_view>> holders_of_record(self_ptr self) {
  if (!self->state.record)
    return std::vector<lease_holder_view>{};
  auto promise = self->make_response_promise<std::vector<lease_holder_view>>();
  self->request(self->state.record, std::chrono::seconds(3), atom::get::value)
    .then(
      [promise](std::vector<lease_row>& rows) mutable {
        std::map<std::string, lease_holder_view> by_holder;
        for (auto& r : rows) {
          if (r.expires_in_ms <= 0) // a holder gone, not yet swept by the owner
            continue;
          auto& v = by_holder[r.holder];
          v.worker = r.holder;
          v.held[r.cluster] = r.count;
          v.expires_in_ms = std::max(v.expires_in_ms, r.expires_in_ms);
        }
        std::vector<lease_holder_view> out;
        for (auto& [name, v] : by_holder)
          out.push_back(std::move(v));
        promise.deliver(std::move(out));
      },
      [promise](caf::error& e) mutable { promise.deliver(std::move(e)); });
  return promise;
}

} // namespace qf
