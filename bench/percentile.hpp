// The p-th percentile (0 to 1) of a bench's samples, nearest rank.
#pragma once

#include <algorithm>
#include <vector>

namespace qf::bench {

inline double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  auto i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

} // namespace qf::bench
