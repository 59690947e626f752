#include "net/wire/tcp_connection.hpp"

namespace qf::wire::detail {

namespace {

/// The connections whose send() bytes wait for the end of the wire
/// thread's current round of ready events. Answers then leave together,
/// right before the thread waits again: a client with several connections
/// (pgbench, a pool) takes them in one wake-up, and the peers they wake
/// find the thread about to sleep rather than preempting its work.
thread_local std::vector<std::shared_ptr<tcp_connection>> held_this_round;
thread_local std::vector<std::shared_ptr<tcp_connection>> releasing_this_round;

} // namespace

void hold_until_round_ends(std::shared_ptr<tcp_connection> conn, io::event_loop& loop) {
  held_this_round.push_back(std::move(conn));
  if (held_this_round.size() > 1)
    return;
  loop.at_round_end([] {
    // Swapped, not moved out: both keep their capacity for the next rounds.
    releasing_this_round.swap(held_this_round);
    for (auto& c : releasing_this_round)
      c->release_held();
    releasing_this_round.clear();
  });
}

} // namespace qf::wire::detail
