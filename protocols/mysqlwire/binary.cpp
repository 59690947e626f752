#include "protocols/mysqlwire/binary.hpp"

#include "protocols/common/temporal.hpp"
#include "protocols/mysqlwire/little_endian.hpp"
#include "protocols/mysqlwire/packets.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace qf::mysqlwire {

namespace {

// MySQL type codes.
constexpr uint8_t t_tiny = 1, t_short = 2, t_long = 3, t_float = 4,
                  t_double = 5, t_null = 6, t_timestamp = 7, t_longlong = 8,
                  t_int24 = 9, t_date = 10, t_time = 11, t_datetime = 12,
                  t_year = 13;

/// Bounded little-endian reads over the client's bytes.
class reader {
public:
  explicit reader(std::string_view in) : in_(in) {
    // nop
  }

  bool take(size_t n, std::string_view& out) {
    if (in_.size() - pos_ < n)
      return false;
    out = in_.substr(pos_, n);
    pos_ += n;
    return true;
  }

  bool le(int bytes, uint64_t& out) {
    std::string_view raw;
    if (!take(static_cast<size_t>(bytes), raw))
      return false;
    out = get_le(raw, 0, bytes);
    return true;
  }

  bool lenenc_string(std::string_view& out) {
    auto n = read_lenenc_int(in_, pos_);
    return n && take(*n, out);
  }

private:
  std::string_view in_;
  size_t pos_ = 0;
};

std::string two(unsigned v) {
  char buf[3];
  std::snprintf(buf, sizeof(buf), "%02u", v % 100);
  return buf;
}

/// The text of a signed or unsigned integer of `bytes` bytes.
std::string integer_text(uint64_t raw, int bytes, bool is_unsigned) {
  if (is_unsigned)
    return std::to_string(raw);
  auto shift = 64 - 8 * bytes;
  auto v = static_cast<int64_t>(raw << shift) >> shift; // sign-extend
  return std::to_string(v);
}

std::string float_text(double v) {
  if (std::isnan(v))
    return "NaN";
  if (std::isinf(v))
    return v > 0 ? "Infinity" : "-Infinity";
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

std::optional<std::string> temporal_text(reader& r, uint8_t code) {
  uint64_t length = 0;
  if (!r.le(1, length))
    return std::nullopt;
  std::string_view raw;
  if (!r.take(length, raw))
    return std::nullopt;
  auto at = [&](size_t pos, int bytes) {
    return pos + static_cast<size_t>(bytes) <= raw.size()
             ? static_cast<unsigned>(get_le(raw, pos, bytes))
             : 0u;
  };
  auto micros = [&](size_t pos) {
    auto us = at(pos, 4);
    return us ? "." + std::to_string(1000000 + us % 1000000).substr(1) : std::string{};
  };
  if (code == t_time) {
    bool negative = at(0, 1) != 0;
    auto hours = at(1, 4) * 24 + at(5, 1);
    return std::string{negative ? "-" : ""} + (hours < 10 ? "0" : "") + std::to_string(hours)
           + ":" + two(at(6, 1)) + ":" + two(at(7, 1)) + micros(8);
  }
  char date[16];
  std::snprintf(date, sizeof(date), "%04u-%02u-%02u", at(0, 2) % 10000,
                at(2, 1) % 100, at(3, 1) % 100);
  if (code == t_date)
    return std::string{date};
  return std::string{date} + " " + two(at(4, 1)) + ":" + two(at(5, 1)) + ":"
         + two(at(6, 1)) + micros(7);
}

std::optional<std::string> value_text(reader& r, param_type t) {
  uint64_t raw = 0;
  switch (t.code) {
    case t_tiny:
      return r.le(1, raw) ? std::optional{integer_text(raw, 1, t.is_unsigned)}
                          : std::nullopt;
    case t_short:
    case t_year:
      return r.le(2, raw) ? std::optional{integer_text(raw, 2, t.is_unsigned)}
                          : std::nullopt;
    case t_long:
    case t_int24:
      return r.le(4, raw) ? std::optional{integer_text(raw, 4, t.is_unsigned)}
                          : std::nullopt;
    case t_longlong:
      return r.le(8, raw) ? std::optional{integer_text(raw, 8, t.is_unsigned)}
                          : std::nullopt;
    case t_float: {
      if (!r.le(4, raw))
        return std::nullopt;
      float f;
      auto bits = static_cast<uint32_t>(raw);
      std::memcpy(&f, &bits, sizeof(f));
      return float_text(f);
    }
    case t_double: {
      if (!r.le(8, raw))
        return std::nullopt;
      double d;
      std::memcpy(&d, &raw, sizeof(d));
      return float_text(d);
    }
    case t_date:
    case t_datetime:
    case t_timestamp:
    case t_time:
      return temporal_text(r, t.code);
    default: {
      // Strings, decimals, blobs, JSON, enums: length-encoded bytes.
      std::string_view s;
      if (!r.lenenc_string(s))
        return std::nullopt;
      return std::string{s};
    }
  }
}

// -- result rows ----------------------------------------------------------------

template <class T>
bool parse_number(const std::string& text, T& out) {
  auto r = std::from_chars(text.data(), text.data() + text.size(), out);
  return r.ec == std::errc{} && r.ptr == text.data() + text.size();
}

double parse_double(const std::string& text) {
  if (text == "NaN")
    return NAN;
  if (text == "Infinity")
    return INFINITY;
  if (text == "-Infinity")
    return -INFINITY;
  double v = 0;
  parse_number(text, v);
  return v;
}

void put_datetime(std::string& out, const std::string& text, bool with_time) {
  auto t = parse_date_time(text);
  if (!t) {
    out += '\0'; // unreadable: the zero date
    return;
  }
  uint8_t length = !with_time ? 4 : t->micros ? 11 : 7;
  out += static_cast<char>(length);
  put_le(out, static_cast<uint64_t>(t->year), 2);
  out += static_cast<char>(t->month);
  out += static_cast<char>(t->day);
  if (length >= 7) {
    out += static_cast<char>(t->hour);
    out += static_cast<char>(t->minute);
    out += static_cast<char>(t->second);
  }
  if (length == 11)
    put_le(out, t->micros, 4);
}

void put_time(std::string& out, const std::string& text) {
  auto t = parse_time_of_day(text);
  if (!t) {
    out += '\0';
    return;
  }
  out += static_cast<char>(t->micros ? 12 : 8);
  out += static_cast<char>(t->negative ? 1 : 0);
  put_le(out, t->hours / 24, 4);
  out += static_cast<char>(t->hours % 24);
  out += static_cast<char>(t->minute);
  out += static_cast<char>(t->second);
  if (t->micros)
    put_le(out, t->micros, 4);
}

void put_binary_value(std::string& out, const sql_type& type,
                      const std::string& text) {
  switch (column_type(type)) {
    case t_tiny: {
      int64_t v = 0;
      if (type.id == type_id::boolean)
        v = text == "true" ? 1 : 0;
      else
        parse_number(text, v);
      put_le(out, static_cast<uint64_t>(v), 1);
      break;
    }
    case t_short:
    case t_long:
    case t_longlong: {
      int64_t v = 0;
      parse_number(text, v);
      auto code = column_type(type);
      put_le(out, static_cast<uint64_t>(v), code == t_short ? 2 : code == t_long ? 4 : 8);
      break;
    }
    case t_float: {
      float f = static_cast<float>(parse_double(text));
      uint32_t bits;
      std::memcpy(&bits, &f, sizeof(bits));
      put_le(out, bits, 4);
      break;
    }
    case t_double: {
      double d = parse_double(text);
      uint64_t bits;
      std::memcpy(&bits, &d, sizeof(bits));
      put_le(out, bits, 8);
      break;
    }
    case t_date:
      put_datetime(out, text, false);
      break;
    case t_datetime:
      put_datetime(out, text, true);
      break;
    case t_time:
      put_time(out, text);
      break;
    default:
      put_lenenc_string(out, text);
  }
}

/// A cell of a server's column in the binary form of its type code; its
/// text is the server's own (an unsigned BIGINT past 2^63 included).
void put_server_value(std::string& out, const server_field& f, const std::string& text) {
  auto integer = [&](int bytes) {
    uint64_t v = 0;
    if (f.is_unsigned)
      v = std::strtoull(text.c_str(), nullptr, 10);
    else
      v = static_cast<uint64_t>(std::strtoll(text.c_str(), nullptr, 10));
    put_le(out, v, bytes);
  };
  switch (f.type) {
    case t_tiny:
      return integer(1);
    case t_short:
    case t_year:
      return integer(2);
    case t_long:
    case t_int24:
      return integer(4);
    case t_longlong:
      return integer(8);
    case t_float:
      return put_binary_value(out, {type_id::real}, text);
    case t_double:
      return put_binary_value(out, {type_id::double_precision}, text);
    case t_date:
    case 14: // NEWDATE
      return put_datetime(out, text, false);
    case t_datetime:
    case t_timestamp:
      return put_datetime(out, text, true);
    case t_time:
      return put_time(out, text);
    default: // strings, DECIMAL, JSON, BIT, ENUM, SET, GEOMETRY, blobs: as sent
      return put_lenenc_string(out, text);
  }
}

} // namespace

sql::literal_kind literal_kind_of(const param_type& t) {
  switch (t.code) {
    case 1:  // TINY
    case 2:  // SHORT
    case 3:  // LONG
    case 8:  // LONGLONG
    case 9:  // INT24
    case 13: // YEAR
      return sql::literal_kind::integer;
    case 4: // FLOAT
    case 5: // DOUBLE
      return sql::literal_kind::real;
    case 10: // DATE
      return sql::literal_kind::date;
    case 7:  // TIMESTAMP
    case 12: // DATETIME
      return sql::literal_kind::datetime;
    case 11: // TIME
      return sql::literal_kind::time;
    case 249: // TINY_BLOB
    case 250: // MEDIUM_BLOB
    case 251: // LONG_BLOB
    case 252: // BLOB
      return sql::literal_kind::bytes;
    default:
      return sql::literal_kind::text;
  }
}

std::optional<std::vector<std::optional<std::string>>> decode_parameters(
  std::string_view bytes, size_t count, std::vector<param_type>& types) {
  std::vector<std::optional<std::string>> out;
  if (count == 0)
    return out;
  reader r{bytes};
  std::string_view nulls;
  uint64_t bound = 0;
  if (!r.take((count + 7) / 8, nulls) || !r.le(1, bound))
    return std::nullopt;
  if (bound == 1) {
    types.assign(count, {});
    for (auto& t : types) {
      uint64_t raw = 0;
      if (!r.le(2, raw))
        return std::nullopt;
      t = {static_cast<uint8_t>(raw & 0xFF), (raw & 0x8000) != 0};
    }
  } else if (types.size() != count) {
    return std::nullopt; // no types were ever bound
  }
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    bool is_null = (static_cast<unsigned char>(nulls[i / 8]) >> (i % 8)) & 1;
    if (is_null || types[i].code == t_null) {
      out.emplace_back();
      continue;
    }
    auto v = value_text(r, types[i]);
    if (!v)
      return std::nullopt;
    out.emplace_back(std::move(*v));
  }
  return out;
}

namespace {

/// A binary-protocol row: header, NULL bitmap (from bit 2), then each
/// non-NULL cell as `put` writes it.
template <class Columns, class Put>
std::string binary_row_of(const Columns& columns, const row_batch& batch, size_t row, Put put) {
  std::string out(1 + (columns.size() + 9) / 8, '\0');
  for (size_t c = 0; c < columns.size(); ++c) {
    const auto& cell = batch.at(row, c);
    if (!cell) {
      auto bit = c + 2;
      out[1 + bit / 8] = static_cast<char>(out[1 + bit / 8] | (1 << (bit % 8)));
      continue;
    }
    put(out, columns[c], *cell);
  }
  return out;
}

} // namespace

std::string binary_row(const std::vector<server_field>& fields, const row_batch& batch, size_t row) {
  return binary_row_of(fields, batch, row, put_server_value);
}

std::string binary_row(const std::vector<column>& cols, const row_batch& batch, size_t row) {
  return binary_row_of(cols, batch, row, [](std::string& out, const column& c, const std::string& text) {
    put_binary_value(out, c.type, text);
  });
}

} // namespace qf::mysqlwire
