#include "protocols/common/temporal.hpp"

#include <cstdio>

namespace qf {

namespace {

/// Reads exactly `width` digits at pos (any count when width is 0).
bool digits(std::string_view s, size_t& pos, size_t width, uint32_t& out) {
  size_t start = pos;
  out = 0;
  while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9'
         && (width == 0 || pos - start < width) && pos - start < 9)
    out = out * 10 + static_cast<uint32_t>(s[pos++] - '0');
  return pos > start && (width == 0 || pos - start == width);
}

bool expect(std::string_view s, size_t& pos, char c) {
  if (pos >= s.size() || s[pos] != c)
    return false;
  ++pos;
  return true;
}

/// "[.ffffff]" at pos, as microseconds; true at the end of the text.
bool fraction(std::string_view s, size_t& pos, uint32_t& micros) {
  micros = 0;
  if (pos == s.size())
    return true;
  if (!expect(s, pos, '.'))
    return false;
  size_t n = 0;
  for (; pos < s.size() && s[pos] >= '0' && s[pos] <= '9'; ++pos, ++n)
    if (n < 6)
      micros = micros * 10 + static_cast<uint32_t>(s[pos] - '0');
  for (; n < 6; ++n)
    micros *= 10;
  return pos == s.size();
}

} // namespace

std::optional<date_time> parse_date_time(std::string_view s) {
  date_time t;
  size_t pos = 0;
  uint32_t y = 0, mo = 0, d = 0;
  if (!digits(s, pos, 4, y) || !expect(s, pos, '-') || !digits(s, pos, 2, mo)
      || !expect(s, pos, '-') || !digits(s, pos, 2, d))
    return std::nullopt;
  if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > 31)
    return std::nullopt;
  t.year = static_cast<int>(y);
  t.month = mo;
  t.day = d;
  if (pos == s.size())
    return t;
  uint32_t h = 0, mi = 0, sec = 0;
  if (!expect(s, pos, ' ') || !digits(s, pos, 2, h) || !expect(s, pos, ':')
      || !digits(s, pos, 2, mi) || !expect(s, pos, ':') || !digits(s, pos, 2, sec)
      || !fraction(s, pos, t.micros) || h > 23 || mi > 59 || sec > 60)
    return std::nullopt;
  t.hour = h;
  t.minute = mi;
  t.second = sec;
  return t;
}

std::optional<time_of_day> parse_time_of_day(std::string_view s) {
  time_of_day t;
  size_t pos = 0;
  if (!s.empty() && s[0] == '-') {
    t.negative = true;
    ++pos;
  }
  uint32_t mi = 0, sec = 0;
  if (!digits(s, pos, 0, t.hours) || !expect(s, pos, ':') || !digits(s, pos, 2, mi)
      || !expect(s, pos, ':') || !digits(s, pos, 2, sec)
      || !fraction(s, pos, t.micros) || mi > 59 || sec > 60)
    return std::nullopt;
  t.minute = mi;
  t.second = sec;
  return t;
}

std::string utc_timestamp_text(std::string_view text) {
  auto sign = text.find_last_of("+-");
  if (sign == std::string_view::npos || sign < 19) // the date's own dashes come first
    return std::string{text};
  auto base = text.substr(0, sign);
  auto offset = text.substr(sign + 1);
  uint32_t parts[3] = {0, 0, 0};
  size_t pos = 0;
  for (int i = 0; i < 3 && pos < offset.size(); ++i) {
    if (i > 0 && !expect(offset, pos, ':'))
      return std::string{text};
    if (!digits(offset, pos, 2, parts[i]))
      return std::string{text};
  }
  auto t = parse_date_time(base);
  if (!t || pos != offset.size())
    return std::string{text};
  int64_t shift = (int64_t{parts[0]} * 3600 + parts[1] * 60 + parts[2]) * (text[sign] == '+' ? 1 : -1);
  if (shift == 0)
    return std::string{base};
  int64_t secs = days_from_civil(t->year, t->month, t->day) * 86400
                 + int64_t{t->hour} * 3600 + t->minute * 60 + t->second - shift;
  int64_t days = (secs >= 0 ? secs : secs - 86399) / 86400;
  int64_t rest = secs - days * 86400;
  auto date = civil_from_days(days);
  if (date.year < 1 || date.year > 9999)
    return std::string{text};
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02u %02u:%02u:%02u", static_cast<int>(date.year),
                date.month, date.day,
                static_cast<unsigned>(rest / 3600), static_cast<unsigned>(rest / 60 % 60),
                static_cast<unsigned>(rest % 60));
  std::string out = buf;
  if (auto dot = base.find('.'); dot != std::string_view::npos)
    out += base.substr(dot); // whole-second offsets leave the fraction alone
  return out;
}

civil_date civil_from_days(int64_t days) {
  // Howard Hinnant's algorithm, as days_from_civil's.
  int64_t z = days + 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  auto doe = static_cast<unsigned>(z - era * 146097);
  unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  unsigned mp = (5 * doy + 2) / 153;
  unsigned d = doy - (153 * mp + 2) / 5 + 1;
  unsigned m = mp < 10 ? mp + 3 : mp - 9;
  return {static_cast<int64_t>(yoe) + era * 400 + (m <= 2 ? 1 : 0), m, d};
}

int64_t days_from_civil(int year, unsigned month, unsigned day) {
  // Howard Hinnant's algorithm: eras of 400 years from 0000-03-01.
  int64_t y = year - (month <= 2 ? 1 : 0);
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  auto yoe = static_cast<unsigned>(y - era * 400);
  unsigned doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1;
  unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

std::string utc_text(int64_t ms, utc_style style) {
  auto days = ms >= 0 ? ms / 86'400'000 : (ms - 86'399'999) / 86'400'000;
  auto in_day = ms - days * 86'400'000;
  auto date = civil_from_days(days);
  char buf[64];
  const bool iso = style == utc_style::iso;
  std::snprintf(buf, sizeof buf, "%04lld-%02u-%02u%c%02d:%02d:%02d.%03d%s",
                static_cast<long long>(date.year), date.month, date.day, iso ? 'T' : ' ',
                static_cast<int>(in_day / 3'600'000), static_cast<int>(in_day / 60'000 % 60),
                static_cast<int>(in_day / 1000 % 60), static_cast<int>(in_day % 1000),
                iso ? "Z" : "+00");
  return buf;
}

} // namespace qf
