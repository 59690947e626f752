// JSON string escaping, number checks and base64.
#include "protocols/common/json_writer.hpp"

#include <array>
#include <cstdint>

namespace qf::json_text {

namespace {

/// Length of the valid UTF-8 sequence at s[i], or 0 when it is malformed.
size_t utf8_sequence_length(std::string_view s, size_t i) {
  auto b0 = static_cast<unsigned char>(s[i]);
  size_t n = 0;
  uint32_t min = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
    min = 0x80;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    min = 0x800;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size())
    return 0;
  uint32_t cp = b0 & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) {
    auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80)
      return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return n;
}

/// Appends the character of `n` bytes at s[i], or U+FFFD for a byte that
/// starts none (n == 0); returns where the next one starts.
size_t append_or_replace(std::string& out, std::string_view s, size_t i, size_t n) {
  if (n == 0) {
    out += "\xEF\xBF\xBD";
    return i + 1;
  }
  out.append(s.substr(i, n));
  return i + n;
}

constexpr std::string_view base64_alphabet
  = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

} // namespace

void append_string(std::string& out, std::string_view s) {
  out.reserve(out.size() + s.size() + 2);
  out += '"';
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        default:
          if (c < 0x20) {
            static constexpr char hex[] = "0123456789abcdef";
            out += "\\u00";
            out += hex[c >> 4];
            out += hex[c & 0xF];
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    i = append_or_replace(out, s, i, utf8_sequence_length(s, i));
  }
  out += '"';
}

bool storable_text(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c == 0)
      return false;
    if (c < 0x80) {
      ++i;
      continue;
    }
    auto n = utf8_sequence_length(s, i);
    if (n == 0)
      return false;
    i += n;
  }
  return true;
}

std::string as_storable_text(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    i = append_or_replace(out, s, i, c == 0 ? 0 : c < 0x80 ? 1 : utf8_sequence_length(s, i));
  }
  return out;
}

bool is_number(std::string_view s) {
  size_t i = 0;
  auto digits = [&] {
    auto start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9')
      ++i;
    return i > start;
  };
  if (i < s.size() && s[i] == '-')
    ++i;
  if (i < s.size() && s[i] == '0')
    ++i;
  else if (!digits())
    return false;
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (!digits())
      return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-'))
      ++i;
    if (!digits())
      return false;
  }
  return i == s.size();
}

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  auto at = [&](size_t k) { return static_cast<unsigned char>(bytes[k]); };
  for (; i + 2 < bytes.size(); i += 3) {
    uint32_t v = (at(i) << 16) | (at(i + 1) << 8) | at(i + 2);
    for (int shift : {18, 12, 6, 0})
      out += base64_alphabet[(v >> shift) & 0x3F];
  }
  if (auto rest = bytes.size() - i; rest > 0) {
    uint32_t v = at(i) << 16;
    if (rest == 2)
      v |= at(i + 1) << 8;
    out += base64_alphabet[(v >> 18) & 0x3F];
    out += base64_alphabet[(v >> 12) & 0x3F];
    out += rest == 2 ? base64_alphabet[(v >> 6) & 0x3F] : '=';
    out += '=';
  }
  return out;
}

bool base64_decode(std::string_view text, std::string& out) {
  out.clear();
  uint32_t acc = 0;
  int bits = 0;
  size_t padding = 0;
  for (char ch : text) {
    if (ch == '=') {
      ++padding;
      continue;
    }
    if (padding > 0)
      return false; // data after padding
    auto pos = base64_alphabet.find(ch);
    if (pos == std::string_view::npos)
      return false;
    acc = (acc << 6) | static_cast<uint32_t>(pos);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return padding <= 2;
}

} // namespace qf::json_text
