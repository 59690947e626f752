// Bounds-checked big-endian reads over untrusted bytes: every read returns
// nullopt past the end instead of reading it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace qf {

class byte_reader {
public:
  explicit byte_reader(std::string_view data) : data_(data) {
    // nop
  }

  size_t remaining() const {
    return data_.size();
  }

  std::optional<uint8_t> u8() {
    if (data_.empty())
      return std::nullopt;
    auto v = static_cast<uint8_t>(data_[0]);
    data_.remove_prefix(1);
    return v;
  }

  std::optional<uint16_t> be_u16() {
    if (data_.size() < 2)
      return std::nullopt;
    auto v = static_cast<uint16_t>((byte(0) << 8) | byte(1));
    data_.remove_prefix(2);
    return v;
  }

  std::optional<uint32_t> be_u32() {
    if (data_.size() < 4)
      return std::nullopt;
    auto v = (uint32_t{byte(0)} << 24) | (uint32_t{byte(1)} << 16)
             | (uint32_t{byte(2)} << 8) | uint32_t{byte(3)};
    data_.remove_prefix(4);
    return v;
  }

  std::optional<int32_t> be_i32() {
    auto v = be_u32();
    if (!v)
      return std::nullopt;
    return static_cast<int32_t>(*v);
  }

  std::optional<int16_t> be_i16() {
    auto v = be_u16();
    if (!v)
      return std::nullopt;
    return static_cast<int16_t>(*v);
  }

  std::optional<int64_t> be_i64() {
    auto hi = be_u32();
    auto lo = be_u32();
    if (!hi || !lo)
      return std::nullopt;
    return static_cast<int64_t>((uint64_t{*hi} << 32) | *lo);
  }

  /// A NUL-terminated string, without its terminator.
  std::optional<std::string_view> cstring() {
    auto nul = data_.find('\0');
    if (nul == std::string_view::npos)
      return std::nullopt;
    auto s = data_.substr(0, nul);
    data_.remove_prefix(nul + 1);
    return s;
  }

  std::optional<std::string_view> bytes(size_t n) {
    if (data_.size() < n)
      return std::nullopt;
    auto s = data_.substr(0, n);
    data_.remove_prefix(n);
    return s;
  }

private:
  unsigned byte(size_t i) const {
    return static_cast<unsigned char>(data_[i]);
  }

  std::string_view data_;
};

/// Appends big-endian integers and back-patches lengths.
namespace byte_writer {

inline void put_u8(std::string& out, uint8_t v) {
  out += static_cast<char>(v);
}

inline void put_be_u16(std::string& out, uint16_t v) {
  out += static_cast<char>(v >> 8);
  out += static_cast<char>(v & 0xFF);
}

inline void put_be_u32(std::string& out, uint32_t v) {
  for (int shift : {24, 16, 8, 0})
    out += static_cast<char>((v >> shift) & 0xFF);
}

inline void put_be_u64(std::string& out, uint64_t v) {
  put_be_u32(out, static_cast<uint32_t>(v >> 32));
  put_be_u32(out, static_cast<uint32_t>(v & 0xFFFFFFFF));
}

inline void patch_be_u32(std::string& out, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out[at + static_cast<size_t>(i)]
      = static_cast<char>((v >> (24 - 8 * i)) & 0xFF);
}

inline void put_cstring(std::string& out, std::string_view s) {
  out.append(s);
  out += '\0';
}

} // namespace byte_writer

} // namespace qf
