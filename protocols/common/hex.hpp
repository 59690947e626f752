// Hexadecimal digits, for percent-decoding and bytea text.
#pragma once

namespace qf {

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
