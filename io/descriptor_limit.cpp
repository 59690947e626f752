#include "io/descriptor_limit.hpp"

#include <sys/resource.h>

#include <algorithm>

namespace qf::io {

uint32_t connection_limit_for(uint64_t descriptors) {
  constexpr uint64_t kept = 256;
  auto half = descriptors > kept ? (descriptors - kept) / 2 : 0;
  return static_cast<uint32_t>(std::clamp<uint64_t>(half, 64, 100'000));
}

uint32_t default_connection_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
    return connection_limit_for(1024);
  if (rl.rlim_cur < rl.rlim_max) {
    rlimit raised{rl.rlim_max, rl.rlim_max};
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0)
      rl = raised;
  }
  return connection_limit_for(rl.rlim_cur == RLIM_INFINITY ? 1'000'000 : rl.rlim_cur);
}

} // namespace qf::io
