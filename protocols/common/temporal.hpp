// Reading the canonical text of dates and times (rows.hpp) back into
// numbers, for the wire protocols' binary formats.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace qf {

/// "YYYY-MM-DD" or "YYYY-MM-DD HH:MM:SS[.ffffff]"; the time is zero for a
/// date. Years 1 to 9999.
struct date_time {
  int year = 0;
  unsigned month = 0, day = 0, hour = 0, minute = 0, second = 0;
  uint32_t micros = 0;
};

std::optional<date_time> parse_date_time(std::string_view text);

/// "[-]HH:MM:SS[.ffffff]", hours possibly beyond 24 (MySQL TIME).
struct time_of_day {
  bool negative = false;
  uint32_t hours = 0;
  unsigned minute = 0, second = 0;
  uint32_t micros = 0;
};

std::optional<time_of_day> parse_time_of_day(std::string_view text);

/// Milliseconds since the epoch in UTC, to the millisecond: ISO 8601
/// ("2026-12-02T07:14:32.123Z") or as PostgreSQL reads a timestamptz
/// ("2026-12-02 07:14:32.123+00").
enum class utc_style { iso, postgres };
std::string utc_text(int64_t ms, utc_style style);

/// Days since 1970-01-01 of a proleptic Gregorian date.
int64_t days_from_civil(int year, unsigned month, unsigned day);

/// The date `days` after 1970-01-01 (days_from_civil's inverse).
struct civil_date {
  int64_t year = 0;
  unsigned month = 0, day = 0;
};
civil_date civil_from_days(int64_t days);

/// PostgreSQL's text of a timestamptz in whatever TimeZone its session
/// has ("2024-02-29 21:00:00.5+09", "... -03:30") as canonical UTC text
/// ("2024-02-29 12:00:00.5"); text it does not read (infinity, BC
/// years) unchanged.
std::string utc_timestamp_text(std::string_view text);

} // namespace qf
