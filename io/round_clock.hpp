// The time as of the current round of an event loop's ready events: read
// once when the loop wakes rather than by every statement the round
// carries (pgbouncer caches its clock per loop iteration likewise). Off a
// loop's thread the clocks are read at each call.
#pragma once

#include <chrono>
#include <cstdint>

namespace qf::io::round_clock {

std::chrono::steady_clock::time_point steady();

/// Milliseconds since the epoch, by the system clock.
int64_t wall_ms();

/// An event loop's thread, as it wakes: the round's time is now.
void begin_round();

} // namespace qf::io::round_clock
