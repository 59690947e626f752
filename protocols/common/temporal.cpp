#include "protocols/common/temporal.hpp"

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

int64_t days_from_civil(int year, unsigned month, unsigned day) {
  // Howard Hinnant's algorithm: eras of 400 years from 0000-03-01.
  int64_t y = year - (month <= 2 ? 1 : 0);
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  auto yoe = static_cast<unsigned>(y - era * 400);
  unsigned doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1;
  unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

} // namespace qf
