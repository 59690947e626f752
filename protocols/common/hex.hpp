// Hexadecimal digits, for percent-decoding and bytea text, and bytes as
// lowercase hex (checksums, secrets in URLs).
#pragma once

#include <string>
#include <string_view>

namespace qf {

/// Two lowercase hex digits per byte.
inline std::string to_hex(std::string_view bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (auto c : bytes) {
    auto b = static_cast<unsigned char>(c);
    out += digits[b >> 4];
    out += digits[b & 0xF];
  }
  return out;
}

/// The value of one hex digit, or -1 when c is none.
constexpr int hex_digit_value(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

} // namespace qf
