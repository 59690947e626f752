// MySQL packets: framing, handshake, commands, server messages.
#include "protocols/mysqlwire/packets.hpp"

#include "protocols/common/byte_reader.hpp"
#include "protocols/mysqlwire/little_endian.hpp"

#include <openssl/sha.h>

#include <algorithm>

namespace qf::mysqlwire {

namespace {

std::string sha1(std::string_view in) {
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(in.data()), in.size(), digest);
  return std::string(reinterpret_cast<const char*>(digest), sizeof(digest));
}

/// A NUL-terminated string at pos; nullopt without a terminator.
std::optional<std::string> read_cstring(std::string_view in, size_t& pos) {
  auto nul = in.find('\0', pos);
  if (nul == std::string_view::npos)
    return std::nullopt;
  std::string s{in.substr(pos, nul - pos)};
  pos = nul + 1;
  return s;
}

/// An auth token: one length byte first with CLIENT_SECURE_CONNECTION,
/// else up to a NUL.
std::optional<std::string> read_auth_token(std::string_view in, size_t& pos,
                                           uint32_t capabilities) {
  if (!(capabilities & client_secure_connection))
    return read_cstring(in, pos);
  if (pos >= in.size())
    return std::nullopt;
  auto n = static_cast<unsigned char>(in[pos++]);
  if (n > in.size() - pos)
    return std::nullopt;
  std::string token{in.substr(pos, n)};
  pos += n;
  return token;
}

} // namespace

decode_result next_packet(std::string_view input, size_t max_message,
                          packet& out) {
  out.payload.clear();
  size_t pos = 0;
  for (;;) {
    if (input.size() - pos < 4)
      return {decode_status::need_more, 0, nullptr};
    auto length = static_cast<size_t>(get_le(input, pos, 3));
    auto seq = static_cast<uint8_t>(input[pos + 3]);
    if (out.payload.size() + length > max_message)
      return {decode_status::error, 0, "packet too large"};
    if (input.size() - pos - 4 < length)
      return {decode_status::need_more, 0, nullptr};
    out.payload.append(input.substr(pos + 4, length));
    out.sequence = seq;
    pos += 4 + length;
    if (length < max_payload)
      return {decode_status::ok, pos, nullptr};
  }
}

uint8_t frame(std::string& out, std::string_view payload, uint8_t seq) {
  for (;;) {
    auto n = std::min(payload.size(), max_payload);
    put_le(out, n, 3);
    out += static_cast<char>(seq++);
    out.append(payload.substr(0, n));
    payload.remove_prefix(n);
    if (n < max_payload)
      return seq; // a full-size packet is followed by one more, maybe empty
  }
}

void put_lenenc_int(std::string& out, uint64_t v) {
  if (v < 251) {
    out += static_cast<char>(v);
  } else if (v < (1u << 16)) {
    out += static_cast<char>(0xFC);
    put_le(out, v, 2);
  } else if (v < (1u << 24)) {
    out += static_cast<char>(0xFD);
    put_le(out, v, 3);
  } else {
    out += static_cast<char>(0xFE);
    put_le(out, v, 8);
  }
}

void put_lenenc_string(std::string& out, std::string_view s) {
  put_lenenc_int(out, s.size());
  out.append(s);
}

std::optional<uint64_t> read_lenenc_int(std::string_view in, size_t& pos) {
  if (pos >= in.size())
    return std::nullopt;
  auto first = static_cast<unsigned char>(in[pos++]);
  int bytes = first < 0xFB ? 0 : first == 0xFC ? 2 : first == 0xFD ? 3
                                 : first == 0xFE ? 8 : -1;
  if (bytes < 0)
    return std::nullopt; // 0xFB is NULL, 0xFF an error: not integers
  if (bytes == 0)
    return first;
  if (in.size() - pos < static_cast<size_t>(bytes))
    return std::nullopt;
  auto v = get_le(in, pos, bytes);
  pos += static_cast<size_t>(bytes);
  return v;
}

std::string encode(const handshake_v10& h) {
  std::string out;
  out += '\x0a'; // protocol version 10
  out += h.server_version;
  out += '\0';
  put_le(out, h.connection_id, 4);
  out.append(h.scramble.substr(0, 8));
  out += '\0';
  put_le(out, h.capabilities & 0xFFFF, 2);
  out += static_cast<char>(h.charset);
  put_le(out, h.status, 2);
  put_le(out, h.capabilities >> 16, 2);
  out += static_cast<char>(h.scramble.size() + 1);
  out.append(10, '\0');
  out.append(h.scramble.substr(8));
  out += '\0';
  out += h.auth_plugin;
  out += '\0';
  return out;
}

std::optional<handshake_response> parse_handshake_response(
  std::string_view in) {
  if (in.size() < 32)
    return std::nullopt;
  handshake_response r;
  r.capabilities = static_cast<uint32_t>(get_le(in, 0, 4));
  if (!(r.capabilities & client_protocol_41))
    return std::nullopt; // pre-4.1 clients are not spoken to
  r.max_packet = static_cast<uint32_t>(get_le(in, 4, 4));
  r.charset = static_cast<uint8_t>(in[8]);
  if (in.size() == 32) {
    r.ssl_request_only = true;
    return r;
  }
  size_t pos = 32;
  auto user = read_cstring(in, pos);
  if (!user)
    return std::nullopt;
  r.user = std::move(*user);
  if (r.capabilities & client_plugin_auth_lenenc) {
    auto n = read_lenenc_int(in, pos);
    if (!n || *n > in.size() - pos)
      return std::nullopt;
    r.auth_response.assign(in.substr(pos, *n));
    pos += *n;
  } else {
    auto token = read_auth_token(in, pos, r.capabilities);
    if (!token)
      return std::nullopt;
    r.auth_response = std::move(*token);
  }
  if ((r.capabilities & client_connect_with_db) && pos < in.size()) {
    auto db = read_cstring(in, pos);
    if (!db)
      return std::nullopt;
    r.database = std::move(*db);
  }
  if ((r.capabilities & client_plugin_auth) && pos < in.size()) {
    auto plugin = read_cstring(in, pos);
    if (plugin)
      r.auth_plugin = std::move(*plugin);
  }
  // Connection attributes follow; nothing here needs them.
  return r;
}

std::string native_password_token(std::string_view password,
                                  std::string_view scramble) {
  if (password.empty())
    return {};
  auto stage1 = sha1(password);
  auto stage2 = sha1(stage1);
  auto mix = sha1(std::string{scramble} + stage2);
  for (size_t i = 0; i < mix.size(); ++i)
    mix[i] = static_cast<char>(mix[i] ^ stage1[i]);
  return mix;
}

namespace {

std::optional<command> parse_change_user(std::string_view in, uint32_t capabilities) {
  size_t pos = 0;
  com_change_user c;
  auto user = read_cstring(in, pos);
  if (!user)
    return std::nullopt;
  c.user = std::move(*user);
  auto token = read_auth_token(in, pos, capabilities);
  if (!token)
    return std::nullopt;
  c.auth_response = std::move(*token);
  auto database = read_cstring(in, pos);
  if (!database)
    return std::nullopt;
  c.database = std::move(*database);
  pos += std::min<size_t>(2, in.size() - pos); // the character set
  if ((capabilities & client_plugin_auth) && pos < in.size()) {
    auto plugin = read_cstring(in, pos);
    if (plugin)
      c.auth_plugin = std::move(*plugin);
  }
  return c; // connection attributes follow; nothing here needs them
}

} // namespace

std::optional<command> parse_command(std::string_view in, uint32_t capabilities) {
  if (in.empty())
    return std::nullopt;
  auto code = static_cast<uint8_t>(in[0]);
  auto rest = in.substr(1);
  switch (code) {
    case 0x01:
      return com_quit{};
    case 0x02:
      return com_init_db{std::string{rest}};
    case 0x03:
      return com_query{std::string{rest}};
    case 0x04: {
      auto nul = rest.find('\0');
      return com_field_list{std::string{rest.substr(0, nul)}};
    }
    case 0x0E:
      return com_ping{};
    case 0x16:
      return com_stmt_prepare{std::string{rest}};
    case 0x17: // statement id, flags, iteration count (always 1), params
      if (rest.size() < 9)
        return std::nullopt;
      return com_stmt_execute{static_cast<uint32_t>(get_le(rest, 0, 4)),
                              static_cast<uint8_t>(rest[4]),
                              std::string{rest.substr(9)}};
    case 0x18:
      if (rest.size() < 6)
        return std::nullopt;
      return com_stmt_send_long_data{static_cast<uint32_t>(get_le(rest, 0, 4))};
    case 0x19:
      if (rest.size() != 4)
        return std::nullopt;
      return com_stmt_close{static_cast<uint32_t>(get_le(rest, 0, 4))};
    case 0x1A:
      if (rest.size() != 4)
        return std::nullopt;
      return com_stmt_reset{static_cast<uint32_t>(get_le(rest, 0, 4))};
    case 0x1F:
      return com_reset_connection{};
    case 0x11:
      return parse_change_user(rest, capabilities);
    default:
      return com_unknown{code};
  }
}

std::string ok_packet(uint64_t affected_rows, uint64_t last_insert_id,
                      uint16_t status, uint16_t warnings, std::string_view info) {
  std::string out(1, '\0');
  put_lenenc_int(out, affected_rows);
  put_lenenc_int(out, last_insert_id);
  put_le(out, status, 2);
  put_le(out, warnings, 2);
  // Length-encoded, as MariaDB sends it with or without
  // CLIENT_SESSION_TRACK (libmariadb reads it so either way).
  if (!info.empty()) {
    put_lenenc_int(out, info.size());
    out += info;
  }
  return out;
}

std::string err_packet(uint16_t code, std::string_view sqlstate,
                       std::string_view message) {
  std::string out(1, '\xff');
  put_le(out, code, 2);
  out += '#';
  std::string state{sqlstate.substr(0, 5)};
  state.resize(5, '0');
  out += state;
  out.append(message);
  return out;
}

std::string eof_packet(uint16_t status, uint16_t warnings) {
  std::string out(1, '\xfe');
  put_le(out, warnings, 2);
  put_le(out, status, 2);
  return out;
}

uint8_t column_type(const sql_type& t) {
  switch (t.id) {
    case type_id::boolean:
    case type_id::tinyint:
      return 1; // TINY
    case type_id::smallint:
      return 2; // SHORT
    case type_id::integer:
      return 3; // LONG
    case type_id::bigint:
      return 8; // LONGLONG
    case type_id::real:
      return 4; // FLOAT
    case type_id::double_precision:
      return 5; // DOUBLE
    case type_id::decimal:
      return 246; // NEWDECIMAL
    case type_id::date:
      return 10; // DATE
    case type_id::time:
      return 11; // TIME
    case type_id::timestamp:
    case type_id::timestamp_tz:
      return 12; // DATETIME
    case type_id::varbinary:
      return 252; // BLOB
    case type_id::json:
      return 245; // JSON
    default:
      return 253; // VAR_STRING
  }
}

server_field server_field_of(const field_parts& f) {
  server_field out;
  auto& d = out.definition;
  put_lenenc_string(d, "def");
  put_lenenc_string(d, f.db);
  put_lenenc_string(d, f.table);
  put_lenenc_string(d, f.org_table);
  put_lenenc_string(d, f.name);
  put_lenenc_string(d, f.org_name);
  d += '\x0c'; // length of the fixed fields
  put_le(d, f.charset, 2);
  put_le(d, f.length, 4);
  d += static_cast<char>(f.type);
  put_le(d, f.flags, 2);
  d += static_cast<char>(f.decimals);
  d.append(2, '\0');
  out.type = f.type;
  out.is_unsigned = (f.flags & 32) != 0; // UNSIGNED_FLAG
  return out;
}

std::string column_definition(const column& c) {
  std::string out;
  put_lenenc_string(out, "def"); // catalog
  put_lenenc_string(out, "");    // schema
  put_lenenc_string(out, "");    // table
  put_lenenc_string(out, "");    // original table
  put_lenenc_string(out, c.name);
  put_lenenc_string(out, c.name);
  out += '\x0c'; // length of the fixed fields
  bool binary = c.type.id == type_id::varbinary;
  put_le(out, binary ? 63 : 45, 2); // binary, else utf8mb4
  put_le(out, 0xFFFFFF, 4);         // column length
  out += static_cast<char>(column_type(c.type));
  put_le(out, binary ? 0x80 : 0, 2); // flags: BINARY_FLAG for blobs
  out += static_cast<char>(c.type.id == type_id::decimal ? c.type.scale : 0);
  out.append(2, '\0');
  return out;
}

std::string text_row(const std::vector<column>& cols, const row_batch& batch,
                     size_t row) {
  std::string out;
  for (size_t c = 0; c < cols.size(); ++c) {
    const auto& cell = batch.at(row, c);
    if (!cell) {
      out += '\xfb';
      continue;
    }
    if (cols[c].type.id == type_id::boolean)
      put_lenenc_string(out, *cell == "true" ? "1" : "0");
    else
      put_lenenc_string(out, *cell);
  }
  return out;
}

} // namespace qf::mysqlwire
