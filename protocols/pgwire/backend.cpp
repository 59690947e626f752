// Server message encoding.
#include "protocols/pgwire/backend.hpp"

#include "protocols/common/byte_reader.hpp"
#include "protocols/common/hex.hpp"
#include "protocols/pgwire/binary_values.hpp"

#include <charconv>
#include <cmath>
#include <cstring>
#include <vector>

namespace qf::pgwire {

namespace {

using namespace byte_writer;

/// Writes the tag and a length placeholder; returns where the length goes.
size_t begin(std::string& out, char tag) {
  out += tag;
  auto at = out.size();
  put_be_u32(out, 0);
  return at;
}

void end(std::string& out, size_t at) {
  patch_be_u32(out, at, static_cast<uint32_t>(out.size() - at));
}

int16_t format_of(const std::vector<int16_t>& formats, size_t column) {
  if (formats.empty())
    return 0;
  if (formats.size() == 1)
    return formats[0];
  return column < formats.size() ? formats[column] : 0;
}

void notice_or_error(std::string& out, char tag, const error_fields& e) {
  auto at = begin(out, tag);
  auto field = [&](char code, std::string_view value) {
    if (value.empty())
      return;
    out += code;
    put_cstring(out, value);
  };
  field('S', e.severity);
  field('V', e.severity);
  field('C', e.sqlstate);
  field('M', e.message);
  field('D', e.detail);
  out += '\0';
  end(out, at);
}

template <class Int>
bool parse_int(const std::string& s, Int& v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc{} && p == s.data() + s.size();
}

} // namespace

uint32_t type_oid(const sql_type& t) {
  switch (t.id) {
    case type_id::boolean:
      return 16;
    case type_id::tinyint:
    case type_id::smallint:
      return 21;
    case type_id::integer:
      return 23;
    case type_id::bigint:
      return 20;
    case type_id::real:
      return 700;
    case type_id::double_precision:
      return 701;
    case type_id::decimal:
      return 1700;
    case type_id::varchar:
      return 1043;
    case type_id::varbinary:
      return 17;
    case type_id::date:
      return 1082;
    case type_id::time:
      return 1083;
    case type_id::timestamp:
      return 1114;
    case type_id::timestamp_tz:
      return 1184;
    case type_id::uuid:
      return 2950;
    case type_id::json:
      return 114;
    case type_id::interval:
      return 1186;
    case type_id::unknown:
      return 25; // text
  }
  return 25;
}

/// PostgreSQL prints fractional seconds without trailing zeros
/// ("12:00:00.123", "12:00:00"); engines such as Trino pad them.
std::string trimmed_fraction(std::string v) {
  auto dot = v.rfind('.');
  if (dot == std::string::npos || v.find_first_not_of("0123456789", dot + 1) != std::string::npos)
    return v;
  auto last = v.find_last_not_of('0');
  v.resize(last == dot ? dot : last + 1);
  return v;
}

std::string text_value(const sql_type& t, const std::string& v) {
  switch (t.id) {
    case type_id::time:
    case type_id::timestamp:
      return trimmed_fraction(v);
    case type_id::boolean:
      return v == "true" || v == "t" || v == "1" ? "t" : "f";
    case type_id::varbinary: {
      static constexpr char hex[] = "0123456789abcdef";
      std::string out = "\\x";
      out.reserve(2 + v.size() * 2);
      for (unsigned char c : v) {
        out += hex[c >> 4];
        out += hex[c & 0xF];
      }
      return out;
    }
    case type_id::timestamp_tz:
      return trimmed_fraction(v) + "+00";
    default:
      return v;
  }
}

bool binary_value(const sql_type& t, const std::string& v, std::string& out) {
  out.clear();
  switch (t.id) {
    case type_id::boolean:
      out += (v == "true" || v == "t" || v == "1") ? '\1' : '\0';
      return true;
    case type_id::tinyint:
    case type_id::smallint: {
      int16_t x = 0;
      if (!parse_int(v, x))
        return false;
      put_be_u16(out, static_cast<uint16_t>(x));
      return true;
    }
    case type_id::integer: {
      int32_t x = 0;
      if (!parse_int(v, x))
        return false;
      put_be_u32(out, static_cast<uint32_t>(x));
      return true;
    }
    case type_id::bigint: {
      int64_t x = 0;
      if (!parse_int(v, x))
        return false;
      put_be_u64(out, static_cast<uint64_t>(x));
      return true;
    }
    case type_id::real:
    case type_id::double_precision: {
      double d = v == "NaN"         ? std::nan("")
                 : v == "Infinity"  ? HUGE_VAL
                 : v == "-Infinity" ? -HUGE_VAL
                                    : std::strtod(v.c_str(), nullptr);
      if (t.id == type_id::real) {
        auto f = static_cast<float>(d);
        uint32_t bits = 0;
        std::memcpy(&bits, &f, 4);
        put_be_u32(out, bits);
      } else {
        uint64_t bits = 0;
        std::memcpy(&bits, &d, 8);
        put_be_u64(out, bits);
      }
      return true;
    }
    case type_id::varchar:
    case type_id::varbinary:
    case type_id::json:
    case type_id::unknown:
      out = v; // text and bytea: the bytes themselves
      return true;
    case type_id::decimal:
      return numeric_to_binary(v, out);
    case type_id::date:
      return date_to_binary(v, out);
    case type_id::time:
      return time_to_binary(v, out);
    case type_id::timestamp:
    case type_id::timestamp_tz: // canonical text is UTC
      return timestamp_to_binary(v, out);
    case type_id::uuid:
      return uuid_to_binary(v, out);
    default:
      return false;
  }
}

bool has_binary_format(const sql_type& t) {
  switch (t.id) {
    case type_id::boolean:
    case type_id::tinyint:
    case type_id::smallint:
    case type_id::integer:
    case type_id::bigint:
    case type_id::real:
    case type_id::double_precision:
    case type_id::varchar:
    case type_id::varbinary:
    case type_id::json:
    case type_id::unknown:
    case type_id::decimal:
    case type_id::date:
    case type_id::time:
    case type_id::timestamp:
    case type_id::timestamp_tz:
    case type_id::uuid:
      return true;
    default:
      return false;
  }
}

namespace {

/// The array types whose binary form is read: of the element types read.
bool is_array_oid(uint32_t oid) {
  for (uint32_t a : {1000u, 1001u, 1005u, 1007u, 1009u, 1014u, 1015u, 1016u, 1021u, 1022u,
                     1115u, 1182u, 1185u, 1231u, 2951u, 199u})
    if (oid == a)
      return true;
  return false;
}

/// An array's binary form (dimensions, a null flag, the element type, each
/// dimension's size and lower bound, then each element's length and
/// bytes) as its text literal: {"1","2"}, nested per dimension, NULL bare,
/// [0:1]={...} for lower bounds other than 1. Every element is quoted,
/// which the input of any element type takes.
std::optional<std::string> array_from_binary(std::string_view bytes) {
  byte_reader r{bytes};
  auto ndim = r.be_i32();
  auto flags = r.be_i32();
  auto elem = r.be_u32();
  if (!ndim || !flags || !elem || *ndim < 0 || *ndim > 6 || is_array_oid(*elem))
    return std::nullopt;
  std::vector<int64_t> sizes;
  std::string bounds;
  bool other_bounds = false;
  size_t total = *ndim == 0 ? 0 : 1;
  for (int d = 0; d < *ndim; ++d) {
    auto size = r.be_i32();
    auto lower = r.be_i32();
    if (!size || !lower || *size < 0 || static_cast<size_t>(*size) > bytes.size())
      return std::nullopt;
    sizes.push_back(*size);
    total *= static_cast<size_t>(*size);
    if (total > bytes.size()) // each element takes 4 bytes at least
      return std::nullopt;
    other_bounds |= *lower != 1;
    bounds += "[" + std::to_string(*lower) + ":" + std::to_string(int64_t{*lower} + *size - 1) + "]";
  }
  std::vector<std::optional<std::string>> items;
  for (size_t i = 0; i < total; ++i) {
    auto len = r.be_i32();
    if (!len || *len < -1)
      return std::nullopt;
    if (*len == -1) {
      items.emplace_back();
      continue;
    }
    auto raw = r.bytes(static_cast<size_t>(*len));
    if (!raw)
      return std::nullopt;
    auto text = binary_param_to_text(*elem, *raw);
    if (!text)
      return std::nullopt;
    items.push_back(std::move(text));
  }
  if (r.remaining() != 0)
    return std::nullopt;
  if (*ndim == 0)
    return "{}";
  std::string out = other_bounds ? bounds + "=" : "";
  size_t next = 0;
  // Nested braces: dimension d holds sizes[d] of dimension d + 1's.
  auto emit = [&](auto& self, size_t d) -> void {
    out += '{';
    for (int64_t k = 0; k < sizes[d]; ++k) {
      if (k > 0)
        out += ',';
      if (d + 1 < sizes.size()) {
        self(self, d + 1);
        continue;
      }
      const auto& item = items[next++];
      if (!item) {
        out += "NULL";
        continue;
      }
      out += '"';
      for (char c : *item) {
        if (c == '"' || c == '\\')
          out += '\\';
        out += c;
      }
      out += '"';
    }
    out += '}';
  };
  emit(emit, 0);
  return out;
}

} // namespace

std::optional<std::string> binary_param_to_text(uint32_t oid,
                                                std::string_view bytes) {
  byte_reader r{bytes};
  auto exact = [&](size_t n) { return bytes.size() == n; };
  switch (oid) {
    case 16: // bool
      if (!exact(1))
        return std::nullopt;
      return bytes[0] ? "true" : "false";
    case 21: // int2
      if (!exact(2))
        return std::nullopt;
      return std::to_string(*r.be_i16());
    case 23: // int4
      if (!exact(4))
        return std::nullopt;
      return std::to_string(*r.be_i32());
    case 20: // int8
      if (!exact(8))
        return std::nullopt;
      return std::to_string(*r.be_i64());
    case 700: { // float4
      if (!exact(4))
        return std::nullopt;
      auto bits = *r.be_u32();
      float f = 0;
      std::memcpy(&f, &bits, 4);
      char buf[32];
      auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), f);
      return std::string(buf, end);
    }
    case 701: { // float8
      if (!exact(8))
        return std::nullopt;
      auto hi = static_cast<uint64_t>(*r.be_u32());
      auto lo = static_cast<uint64_t>(*r.be_u32());
      auto bits = (hi << 32) | lo;
      double d = 0;
      std::memcpy(&d, &bits, 8);
      char buf[32];
      auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), d);
      return std::string(buf, end);
    }
    case 1700:
      return numeric_from_binary(bytes);
    case 1082:
      return date_from_binary(bytes);
    case 1114:
    case 1184:
      return timestamp_from_binary(bytes);
    case 2950:
      return uuid_from_binary(bytes);
    case 0:  // unspecified: node-postgres sends its Buffers so, for bytea
    case 17: // bytea: its text form, hex, since the bytes may be anything
      return "\\x" + to_hex(bytes);
    case 19:   // name
    case 25:   // text
    case 114:  // json
    case 705:  // unknown
    case 1042: // bpchar
    case 1043: // varchar
      return std::string{bytes};
    default:
      if (is_array_oid(oid))
        return array_from_binary(bytes);
      return std::nullopt;
  }
}

void authentication_ok(std::string& out) {
  auto at = begin(out, 'R');
  put_be_u32(out, 0);
  end(out, at);
}

void authentication_cleartext(std::string& out) {
  auto at = begin(out, 'R');
  put_be_u32(out, 3);
  end(out, at);
}

void parameter_status(std::string& out, std::string_view name,
                      std::string_view value) {
  auto at = begin(out, 'S');
  put_cstring(out, name);
  put_cstring(out, value);
  end(out, at);
}

void backend_key_data(std::string& out, int32_t pid, int32_t secret) {
  auto at = begin(out, 'K');
  put_be_u32(out, static_cast<uint32_t>(pid));
  put_be_u32(out, static_cast<uint32_t>(secret));
  end(out, at);
}

void ready_for_query(std::string& out, char status) {
  auto at = begin(out, 'Z');
  out += status;
  end(out, at);
}

void row_description(std::string& out, const std::vector<column>& cols,
                     const std::vector<int16_t>& formats) {
  auto at = begin(out, 'T');
  put_be_u16(out, static_cast<uint16_t>(cols.size()));
  for (size_t i = 0; i < cols.size(); ++i) {
    put_cstring(out, cols[i].name);
    put_be_u32(out, 0); // table OID
    put_be_u16(out, 0); // column number
    put_be_u32(out, type_oid(cols[i].type));
    put_be_u16(out, static_cast<uint16_t>(-1)); // type size: variable
    put_be_u32(out, static_cast<uint32_t>(-1)); // type modifier
    put_be_u16(out, static_cast<uint16_t>(format_of(formats, i)));
  }
  end(out, at);
}

void no_data(std::string& out) {
  end(out, begin(out, 'n'));
}

void parameter_description(std::string& out,
                           const std::vector<uint32_t>& types) {
  auto at = begin(out, 't');
  put_be_u16(out, static_cast<uint16_t>(types.size()));
  for (auto oid : types)
    put_be_u32(out, oid);
  end(out, at);
}

void data_rows(std::string& out, const std::vector<column>& cols,
               const std::vector<int16_t>& formats, const row_batch& batch,
               size_t first, size_t count) {
  std::string scratch;
  for (size_t r = first; r < first + count; ++r) {
    auto at = begin(out, 'D');
    put_be_u16(out, static_cast<uint16_t>(cols.size()));
    for (size_t c = 0; c < cols.size(); ++c) {
      const auto& cell = batch.at(r, c);
      if (!cell) {
        put_be_u32(out, static_cast<uint32_t>(-1));
        continue;
      }
      if (format_of(formats, c) == 1 && binary_value(cols[c].type, *cell,
                                                     scratch)) {
        put_be_u32(out, static_cast<uint32_t>(scratch.size()));
        out += scratch;
      } else {
        auto text = text_value(cols[c].type, *cell);
        put_be_u32(out, static_cast<uint32_t>(text.size()));
        out += text;
      }
    }
    end(out, at);
  }
}

void command_complete(std::string& out, std::string_view tag) {
  auto at = begin(out, 'C');
  put_cstring(out, tag);
  end(out, at);
}

void empty_query_response(std::string& out) {
  end(out, begin(out, 'I'));
}

void parse_complete(std::string& out) {
  end(out, begin(out, '1'));
}

void bind_complete(std::string& out) {
  end(out, begin(out, '2'));
}

void close_complete(std::string& out) {
  end(out, begin(out, '3'));
}

void portal_suspended(std::string& out) {
  end(out, begin(out, 's'));
}

void error_response(std::string& out, const error_fields& e) {
  notice_or_error(out, 'E', e);
}

void notice_response(std::string& out, const error_fields& e) {
  notice_or_error(out, 'N', e);
}

} // namespace qf::pgwire
