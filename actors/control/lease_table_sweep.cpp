// The lease table's sweep locks (actors/control/sweep_locks.hpp): served
// by the replica that owns the leases, forwarded by the others, so that
// one node of the whole fleet holds each lock.
#include "actors/control/lease_table.hpp"

#include "actors/node/node.hpp"

#include <caf/all.hpp>

namespace qf {

uint64_t lease_table_state::first_sweep_token() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count());
}

caf::result<worker_api::sweep_answer>
serve_sweep_lock(lease_table_actor::stateful_pointer<lease_table_state> self,
                 worker_api::sweep_verb verb, worker_api::sweep_call& c) {
  auto& st = self->state;
  if (!st.owner)
    return self->delegate(st.cfg.forwarder, atom::sweep_lock::value, verb, std::move(c));
  auto now = self->clock().now();
  auto held = [](std::variant<worker_api::sweep_answer, sweep_locks::not_held> r)
    -> caf::result<worker_api::sweep_answer> {
    if (auto refused = std::get_if<sweep_locks::not_held>(&r))
      return make_error(errc::lease_not_held, refused->message);
    return std::get<worker_api::sweep_answer>(std::move(r));
  };
  switch (verb) {
    case worker_api::sweep_verb::acquire:
      return st.locks.acquire(c, now);
    case worker_api::sweep_verb::release:
      return held(st.locks.release(c, now));
    case worker_api::sweep_verb::publish: {
      std::set<std::string> known;
      if (auto active = st.cfg.cell->load())
        for (const auto& [name, cluster] : active->clusters)
          known.insert(name);
      return held(st.locks.publish(c, known, now));
    }
    case worker_api::sweep_verb::counts:
      return st.locks.counts(c.name, now);
  }
  return make_error(errc::bad_lease, "no such sweep-lock call");
}

} // namespace qf
