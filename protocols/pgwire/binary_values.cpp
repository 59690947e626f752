#include "protocols/pgwire/binary_values.hpp"

#include "protocols/common/byte_reader.hpp"
#include "protocols/common/hex.hpp"
#include "protocols/common/temporal.hpp"

#include <cstdio>
#include <limits>
#include <vector>

namespace qf::pgwire {

using namespace byte_writer;

namespace {

// PostgreSQL counts days and microseconds from 2000-01-01.
constexpr int64_t epoch_2000_days = 10957; // days from 1970-01-01
constexpr int64_t micros_per_day = 86'400'000'000;
constexpr uint16_t numeric_negative = 0x4000;
constexpr uint16_t numeric_nan = 0xC000;

bool all_digits(std::string_view s) {
  for (char c : s)
    if (c < '0' || c > '9')
      return false;
  return true;
}

/// "YYYY-MM-DD[ HH:MM:SS[.ffffff]]" of a day since 2000-01-01 and the
/// microseconds into it.
std::string civil_text(int64_t days, int64_t rest, bool with_time) {
  auto [y, m, d] = civil_from_days(days + epoch_2000_days);
  char buf[64];
  if (!with_time) {
    std::snprintf(buf, sizeof(buf), "%04lld-%02u-%02u", static_cast<long long>(y), m, d);
    return buf;
  }
  auto secs = rest / 1'000'000;
  auto us = rest % 1'000'000;
  std::snprintf(buf, sizeof(buf), "%04lld-%02u-%02u %02lld:%02lld:%02lld",
                static_cast<long long>(y), m, d, static_cast<long long>(secs / 3600),
                static_cast<long long>(secs / 60 % 60), static_cast<long long>(secs % 60));
  std::string out = buf;
  if (us) {
    std::snprintf(buf, sizeof(buf), ".%06lld", static_cast<long long>(us));
    out += buf;
    while (out.back() == '0')
      out.pop_back();
  }
  return out;
}

} // namespace

bool numeric_to_binary(std::string_view text, std::string& out) {
  if (text == "NaN") {
    put_be_u16(out, 0);
    put_be_u16(out, 0);
    put_be_u16(out, numeric_nan);
    put_be_u16(out, 0);
    return true;
  }
  bool negative = !text.empty() && text[0] == '-';
  if (negative || (!text.empty() && text[0] == '+'))
    text.remove_prefix(1);
  auto dot = text.find('.');
  auto whole = text.substr(0, dot);
  auto frac = dot == std::string_view::npos ? std::string_view{} : text.substr(dot + 1);
  if ((whole.empty() && frac.empty()) || !all_digits(whole) || !all_digits(frac)
      || frac.size() > 0x3FFF)
    return false;
  // Base-10000 digits aligned at the decimal point.
  std::string padded((4 - whole.size() % 4) % 4, '0');
  padded += whole;
  auto weight = static_cast<int>(padded.size() / 4) - 1;
  padded += frac;
  padded.append((4 - frac.size() % 4) % 4, '0');
  std::vector<uint16_t> groups;
  for (size_t i = 0; i < padded.size(); i += 4)
    groups.push_back(static_cast<uint16_t>(std::stoi(padded.substr(i, 4))));
  size_t first = 0;
  while (first < groups.size() && groups[first] == 0) {
    ++first;
    --weight;
  }
  size_t last = groups.size();
  while (last > first && groups[last - 1] == 0)
    --last;
  if (first == last) { // zero
    weight = 0;
    negative = false;
  }
  put_be_u16(out, static_cast<uint16_t>(last - first));
  put_be_u16(out, static_cast<uint16_t>(static_cast<int16_t>(weight)));
  put_be_u16(out, negative ? numeric_negative : 0);
  put_be_u16(out, static_cast<uint16_t>(frac.size()));
  for (size_t i = first; i < last; ++i)
    put_be_u16(out, groups[i]);
  return true;
}

std::optional<std::string> numeric_from_binary(std::string_view bytes) {
  byte_reader r{bytes};
  auto ndigits = r.be_u16();
  auto weight = r.be_i16();
  auto sign = r.be_u16();
  auto dscale = r.be_u16();
  if (!ndigits || !weight || !sign || !dscale || r.remaining() != size_t{*ndigits} * 2
      || *dscale > 0x3FFF)
    return std::nullopt;
  if (*sign == numeric_nan)
    return "NaN";
  std::vector<uint16_t> groups;
  for (size_t i = 0; i < *ndigits; ++i) {
    auto g = *r.be_u16();
    if (g > 9999)
      return std::nullopt;
    groups.push_back(g);
  }
  auto group = [&](int index) -> uint16_t { // index 0 is the one of weight
    return index >= 0 && static_cast<size_t>(index) < groups.size() ? groups[static_cast<size_t>(index)] : 0;
  };
  std::string out = *sign == numeric_negative ? "-" : "";
  if (*weight < 0) {
    out += '0';
  } else {
    out += std::to_string(group(0));
    char buf[8];
    for (int i = 1; i <= *weight; ++i) {
      std::snprintf(buf, sizeof(buf), "%04u", group(i));
      out += buf;
    }
  }
  if (*dscale > 0) {
    out += '.';
    std::string digits;
    char buf[8];
    for (int i = *weight + 1; digits.size() < *dscale; ++i) {
      std::snprintf(buf, sizeof(buf), "%04u", group(i));
      digits += buf;
    }
    out += digits.substr(0, *dscale);
  }
  return out;
}

bool date_to_binary(std::string_view text, std::string& out) {
  auto t = parse_date_time(text);
  if (!t)
    return false;
  auto days = days_from_civil(t->year, t->month, t->day) - epoch_2000_days;
  put_be_u32(out, static_cast<uint32_t>(static_cast<int32_t>(days)));
  return true;
}

bool time_to_binary(std::string_view text, std::string& out) {
  auto t = parse_time_of_day(text);
  if (!t || t->negative || t->hours > 24)
    return false;
  auto micros = ((int64_t{t->hours} * 60 + t->minute) * 60 + t->second) * 1'000'000
                + t->micros;
  put_be_u64(out, static_cast<uint64_t>(micros));
  return true;
}

bool timestamp_to_binary(std::string_view text, std::string& out) {
  auto t = parse_date_time(text);
  if (!t)
    return false;
  auto days = days_from_civil(t->year, t->month, t->day) - epoch_2000_days;
  auto micros = days * micros_per_day
                + ((int64_t{t->hour} * 60 + t->minute) * 60 + t->second) * 1'000'000
                + t->micros;
  put_be_u64(out, static_cast<uint64_t>(micros));
  return true;
}

bool uuid_to_binary(std::string_view text, std::string& out) {
  std::string bytes;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '-')
      continue;
    if (i + 1 >= text.size() || hex_digit_value(text[i]) < 0 || hex_digit_value(text[i + 1]) < 0)
      return false;
    bytes += static_cast<char>(hex_digit_value(text[i]) * 16 + hex_digit_value(text[i + 1]));
    ++i;
  }
  if (bytes.size() != 16)
    return false;
  out += bytes;
  return true;
}

std::optional<std::string> date_from_binary(std::string_view bytes) {
  byte_reader r{bytes};
  auto days = r.be_i32();
  if (!days || r.remaining() != 0)
    return std::nullopt;
  if (*days == std::numeric_limits<int32_t>::max())
    return "infinity";
  if (*days == std::numeric_limits<int32_t>::min())
    return "-infinity";
  return civil_text(*days, 0, false);
}

std::optional<std::string> timestamp_from_binary(std::string_view bytes) {
  byte_reader r{bytes};
  auto micros = r.be_i64();
  if (!micros || r.remaining() != 0)
    return std::nullopt;
  if (*micros == std::numeric_limits<int64_t>::max())
    return "infinity";
  if (*micros == std::numeric_limits<int64_t>::min())
    return "-infinity";
  auto days = *micros / micros_per_day;
  auto rest = *micros % micros_per_day;
  if (rest < 0) {
    rest += micros_per_day;
    --days;
  }
  return civil_text(days, rest, true);
}

std::optional<std::string> uuid_from_binary(std::string_view bytes) {
  if (bytes.size() != 16)
    return std::nullopt;
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10)
      out += '-';
    auto c = static_cast<unsigned char>(bytes[i]);
    out += hex[c >> 4];
    out += hex[c & 0xF];
  }
  return out;
}

} // namespace qf::pgwire
