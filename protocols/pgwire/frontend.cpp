// Client message framing and parsing, all reads bounds-checked.
#include "protocols/pgwire/frontend.hpp"

#include "protocols/common/byte_reader.hpp"

namespace qf::pgwire {

namespace {

/// Counts are 16 bits on the wire, read unsigned as PostgreSQL reads them:
/// a Bind may carry up to 65,535 parameters.
std::optional<size_t> count(byte_reader& r) {
  auto n = r.be_u16();
  if (!n)
    return std::nullopt;
  return static_cast<size_t>(*n);
}

std::optional<std::vector<int16_t>> formats(byte_reader& r) {
  auto n = count(r);
  if (!n || *n * 2 > r.remaining())
    return std::nullopt;
  std::vector<int16_t> out;
  out.reserve(*n);
  for (size_t i = 0; i < *n; ++i) {
    auto f = r.be_i16();
    if (!f || (*f != 0 && *f != 1))
      return std::nullopt;
    out.push_back(*f);
  }
  return out;
}

std::optional<message> parse_bind(byte_reader& r) {
  bind b;
  auto portal = r.cstring();
  auto stmt = r.cstring();
  if (!portal || !stmt)
    return std::nullopt;
  b.portal = *portal;
  b.statement = *stmt;
  auto pf = formats(r);
  if (!pf)
    return std::nullopt;
  b.param_formats = std::move(*pf);
  auto n = count(r);
  // Each parameter takes at least its 4-byte length: bounds the reserve.
  if (!n || *n * 4 > r.remaining())
    return std::nullopt;
  b.params.reserve(*n);
  for (size_t i = 0; i < *n; ++i) {
    auto len = r.be_i32();
    if (!len || *len < -1)
      return std::nullopt;
    if (*len == -1) {
      b.params.emplace_back();
      continue;
    }
    auto bytes = r.bytes(static_cast<size_t>(*len));
    if (!bytes)
      return std::nullopt;
    b.params.emplace_back(std::string{*bytes});
  }
  auto rf = formats(r);
  if (!rf || r.remaining() != 0)
    return std::nullopt;
  b.result_formats = std::move(*rf);
  return b;
}

std::optional<message> parse_parse(byte_reader& r) {
  parse p;
  auto name = r.cstring();
  auto sql = r.cstring();
  auto n = count(r);
  if (!name || !sql || !n || *n * 4 > r.remaining())
    return std::nullopt;
  p.statement = *name;
  p.sql = *sql;
  for (size_t i = 0; i < *n; ++i)
    p.param_types.push_back(*r.be_u32());
  if (r.remaining() != 0)
    return std::nullopt;
  return p;
}

/// Describe and Close share a shape: a kind byte and a name.
template <class T>
std::optional<message> parse_named(byte_reader& r) {
  auto kind = r.u8();
  auto name = r.cstring();
  if (!kind || (*kind != 'S' && *kind != 'P') || !name || r.remaining() != 0)
    return std::nullopt;
  T out;
  out.kind = static_cast<char>(*kind);
  out.name = *name;
  return out;
}

} // namespace

decode_result next_frame(std::string_view input, bool startup_phase,
                         size_t max_length, frame& out) {
  size_t header = startup_phase ? 4 : 5;
  if (input.size() < header)
    return {decode_status::need_more, 0, nullptr};
  byte_reader r{input};
  char tag = startup_phase ? char{0} : static_cast<char>(*r.u8());
  auto length = *r.be_u32();
  auto limit = startup_phase ? max_startup_length : max_length;
  if (length < 4)
    return {decode_status::error, 0, "message length below 4"};
  if (length > limit)
    return {decode_status::error, 0, "message too large"};
  size_t total = header + (length - 4);
  if (input.size() < total)
    return {decode_status::need_more, 0, nullptr, total};
  out = frame{tag, input.substr(header, length - 4)};
  return {decode_status::ok, total, nullptr};
}

std::optional<startup_packet> parse_startup(std::string_view body) {
  byte_reader r{body};
  auto code = r.be_u32();
  if (!code)
    return std::nullopt;
  if (*code == ssl_request_code)
    return r.remaining() == 0 ? std::optional<startup_packet>{ssl_request{}}
                              : std::nullopt;
  if (*code == gssenc_request_code)
    return r.remaining() == 0 ? std::optional<startup_packet>{gssenc_request{}}
                              : std::nullopt;
  if (*code == cancel_request_code) {
    auto pid = r.be_i32();
    auto key = r.be_i32();
    if (!pid || !key || r.remaining() != 0)
      return std::nullopt;
    return cancel_request{*pid, *key};
  }
  startup_message m;
  m.protocol = *code;
  for (;;) {
    auto key = r.cstring();
    if (!key)
      return std::nullopt;
    if (key->empty())
      break; // the terminating NUL
    auto value = r.cstring();
    if (!value)
      return std::nullopt;
    m.params[std::string{*key}] = std::string{*value};
  }
  if (r.remaining() != 0)
    return std::nullopt;
  return m;
}

std::optional<message> parse_message(const frame& f) {
  byte_reader r{f.body};
  switch (f.tag) {
    case 'Q': {
      auto sql = r.cstring();
      if (!sql || r.remaining() != 0)
        return std::nullopt;
      return query{std::string{*sql}};
    }
    case 'P':
      return parse_parse(r);
    case 'B':
      return parse_bind(r);
    case 'D':
      return parse_named<describe>(r);
    case 'C':
      return parse_named<close>(r);
    case 'E': {
      auto portal = r.cstring();
      auto max = r.be_i32();
      if (!portal || !max || r.remaining() != 0)
        return std::nullopt;
      return execute{std::string{*portal}, *max};
    }
    case 'S':
      return f.body.empty() ? std::optional<message>{sync{}} : std::nullopt;
    case 'H':
      return f.body.empty() ? std::optional<message>{flush{}} : std::nullopt;
    case 'X':
      return terminate{};
    case 'p': {
      auto pw = r.cstring();
      if (!pw)
        return std::nullopt;
      return password{std::string{*pw}};
    }
    default:
      return std::nullopt;
  }
}

} // namespace qf::pgwire
