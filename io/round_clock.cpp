#include "io/round_clock.hpp"

namespace qf::io::round_clock {

namespace {

struct round_time {
  bool set = false;
  std::chrono::steady_clock::time_point steady;
  int64_t wall_ms = 0;
};

thread_local round_time current;

int64_t system_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

} // namespace

std::chrono::steady_clock::time_point steady() {
  return current.set ? current.steady : std::chrono::steady_clock::now();
}

int64_t wall_ms() {
  return current.set ? current.wall_ms : system_ms();
}

void begin_round() {
  current.set = true;
  current.steady = std::chrono::steady_clock::now();
  current.wall_ms = system_ms();
}

} // namespace qf::io::round_clock
