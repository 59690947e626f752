// Comparing secrets without leaking, through timing, how much matched.
#pragma once

#include <string_view>

namespace qf {

/// Constant time in the length of the longer input.
inline bool secrets_equal(std::string_view a, std::string_view b) {
  auto n = a.size() > b.size() ? a.size() : b.size();
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    auto x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    auto y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff = static_cast<unsigned char>(diff | (x ^ y));
  }
  return diff == 0;
}

} // namespace qf
