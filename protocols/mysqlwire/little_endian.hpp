// MySQL's integers are little-endian on the wire.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace qf::mysqlwire {

inline void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out += static_cast<char>((v >> (8 * i)) & 0xFF);
}

/// Reads `bytes` bytes at pos; the caller has checked they are there.
inline uint64_t get_le(std::string_view in, size_t pos, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i)
    v = (v << 8) | static_cast<unsigned char>(in[pos + static_cast<size_t>(i)]);
  return v;
}

} // namespace qf::mysqlwire
