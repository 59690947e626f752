#include "io/usable_cores.hpp"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace qf::io {

std::optional<unsigned> cores_in_cpu_max(std::string_view text) {
  auto space = text.find(' ');
  if (space == std::string_view::npos)
    return std::nullopt;
  auto quota_text = text.substr(0, space);
  auto period_text = text.substr(space + 1);
  while (!period_text.empty() && (period_text.back() == '\n' || period_text.back() == ' '))
    period_text.remove_suffix(1);
  unsigned long long quota = 0;
  unsigned long long period = 0;
  auto q = std::from_chars(quota_text.data(), quota_text.data() + quota_text.size(), quota);
  auto p = std::from_chars(period_text.data(), period_text.data() + period_text.size(), period);
  if (q.ec != std::errc{} || q.ptr != quota_text.data() + quota_text.size()
      || p.ec != std::errc{} || p.ptr != period_text.data() + period_text.size() || period == 0
      || quota == 0)
    return std::nullopt; // "max": no limit
  return static_cast<unsigned>(std::min<unsigned long long>((quota + period - 1) / period, 1u << 16));
}

unsigned usable_cores() {
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0 && CPU_COUNT(&allowed) > 0)
    cores = static_cast<unsigned>(CPU_COUNT(&allowed));
  std::ifstream cpu_max("/sys/fs/cgroup/cpu.max");
  std::stringstream text;
  text << cpu_max.rdbuf();
  if (auto quota = cores_in_cpu_max(text.str()))
    cores = std::min(cores, std::max(1u, *quota));
  return cores;
}

} // namespace qf::io
