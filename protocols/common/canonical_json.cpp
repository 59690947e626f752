#include "protocols/common/canonical_json.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <vector>

namespace qf::json_text {

namespace {

/// Decodes one UTF-8 sequence at s[i]; -1 when it is malformed (overlong,
/// surrogate, beyond U+10FFFF, cut short).
int32_t next_code_point(const std::string& s, size_t& i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  auto lead = byte(i);
  if (lead < 0x80) {
    ++i;
    return lead;
  }
  size_t extra = lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : lead >= 0xC0 ? 1 : 0;
  if (extra == 0 || lead > 0xF4 || i + extra >= s.size())
    return -1; // a continuation byte first, or the sequence cut short
  int32_t cp = lead & (0x3F >> extra);
  for (size_t k = 1; k <= extra; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80)
      return -1;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  static constexpr int32_t least[] = {0, 0x80, 0x800, 0x10000};
  if (cp < least[extra] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return -1;
  i += extra + 1;
  return cp;
}

/// The UTF-16 code units of s (valid UTF-8), which JCS sorts names by.
bool utf16_units(const std::string& s, std::vector<uint16_t>& out) {
  out.clear();
  for (size_t i = 0; i < s.size();) {
    auto cp = next_code_point(s, i);
    if (cp < 0)
      return false;
    if (cp >= 0x10000) {
      cp -= 0x10000;
      out.push_back(static_cast<uint16_t>(0xD800 + (cp >> 10)));
      out.push_back(static_cast<uint16_t>(0xDC00 + (cp & 0x3FF)));
    } else {
      out.push_back(static_cast<uint16_t>(cp));
    }
  }
  return true;
}

bool append_string(std::string& out, const std::string& s) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    auto start = i;
    auto cp = next_code_point(s, i);
    if (cp < 0)
      return false;
    switch (cp) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
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
        if (cp < 0x20) {
          static constexpr char hex[] = "0123456789abcdef";
          out += "\\u00";
          out += hex[cp >> 4];
          out += hex[cp & 0xF];
        } else {
          out.append(s, start, i - start);
        }
    }
  }
  out += '"';
  return true;
}

bool append(std::string& out, const nlohmann::json& v) {
  using t = nlohmann::json::value_t;
  switch (v.type()) {
    case t::null:
      out += "null";
      return true;
    case t::boolean:
      out += v.get<bool>() ? "true" : "false";
      return true;
    // JCS writes every number as an IEEE 754 double: integers beyond 2^53
    // as the double they round to, as JSON.stringify would.
    case t::number_integer: {
      auto i = v.get<int64_t>();
      constexpr int64_t exact = int64_t{1} << 53;
      out += i > -exact && i < exact ? std::to_string(i)
                                     : ecmascript_number(static_cast<double>(i));
      return true;
    }
    case t::number_unsigned: {
      auto u = v.get<uint64_t>();
      out += u < (uint64_t{1} << 53) ? std::to_string(u)
                                     : ecmascript_number(static_cast<double>(u));
      return true;
    }
    case t::number_float: {
      auto x = v.get<double>();
      if (!std::isfinite(x))
        return false;
      out += ecmascript_number(x);
      return true;
    }
    case t::string:
      return append_string(out, v.get_ref<const std::string&>());
    case t::array: {
      out += '[';
      bool first = true;
      for (const auto& item : v) {
        if (!first)
          out += ',';
        first = false;
        if (!append(out, item))
          return false;
      }
      out += ']';
      return true;
    }
    case t::object: {
      struct member {
        std::vector<uint16_t> units;
        const std::string* name;
        const nlohmann::json* value;
      };
      std::vector<member> members;
      members.reserve(v.size());
      for (auto it = v.begin(); it != v.end(); ++it) {
        member m{{}, &it.key(), &it.value()};
        if (!utf16_units(it.key(), m.units))
          return false;
        members.push_back(std::move(m));
      }
      std::sort(members.begin(), members.end(),
                [](const member& a, const member& b) { return a.units < b.units; });
      out += '{';
      for (size_t i = 0; i < members.size(); ++i) {
        if (i > 0)
          out += ',';
        if (!append_string(out, *members[i].name))
          return false;
        out += ':';
        if (!append(out, *members[i].value))
          return false;
      }
      out += '}';
      return true;
    }
    default: // binary, discarded: not JSON
      return false;
  }
}

} // namespace

std::string ecmascript_number(double x) {
  if (x == 0)
    return "0"; // -0 too
  std::string out;
  if (x < 0) {
    out += '-';
    x = -x;
  }
  // Shortest round-trip digits in scientific form: d[.ddd]e±XX.
  char buf[64];
  auto end = std::to_chars(buf, buf + sizeof(buf), x, std::chars_format::scientific).ptr;
  std::string_view sci{buf, static_cast<size_t>(end - buf)};
  auto e = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e))
    if (c != '.')
      digits += c;
  int exponent = 0;
  auto exp_text = sci.substr(e + 1);
  if (!exp_text.empty() && exp_text.front() == '+')
    exp_text.remove_prefix(1);
  std::from_chars(exp_text.data(), exp_text.data() + exp_text.size(), exponent);
  while (digits.size() > 1 && digits.back() == '0')
    digits.pop_back();
  // ECMA-262 Number::toString: x = 0.digits * 10^n.
  int k = static_cast<int>(digits.size());
  int n = exponent + 1;
  if (k <= n && n <= 21) {
    out += digits;
    out.append(static_cast<size_t>(n - k), '0');
  } else if (0 < n && n <= 21) {
    out += digits.substr(0, static_cast<size_t>(n));
    out += '.';
    out += digits.substr(static_cast<size_t>(n));
  } else if (-6 < n && n <= 0) {
    out += "0.";
    out.append(static_cast<size_t>(-n), '0');
    out += digits;
  } else {
    out += digits[0];
    if (k > 1) {
      out += '.';
      out += digits.substr(1);
    }
    out += 'e';
    out += n - 1 < 0 ? '-' : '+';
    out += std::to_string(std::abs(n - 1));
  }
  return out;
}

std::optional<std::string> canonical(const nlohmann::json& v) {
  std::string out;
  if (!append(out, v))
    return std::nullopt;
  return out;
}

} // namespace qf::json_text
