// MySQL client/server protocol (4.1+), server side: packet framing with the
// 16 MiB continuation rule, the handshake, commands, and the messages a
// server sends. Pure: no sockets, no clock, never throws.
#pragma once

#include "protocols/common/rows.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace qf::mysqlwire {

/// A packet's payload is at most this; longer payloads continue in the
/// next packet, and a payload of exactly this size is followed by one more.
inline constexpr size_t max_payload = 0xFFFFFF;

// Capability flags we offer and read.
inline constexpr uint32_t client_long_password = 1;
inline constexpr uint32_t client_found_rows = 2;
inline constexpr uint32_t client_long_flag = 4;
inline constexpr uint32_t client_connect_with_db = 8;
inline constexpr uint32_t client_ignore_space = 256;
inline constexpr uint32_t client_protocol_41 = 512;
inline constexpr uint32_t client_ssl = 2048;
inline constexpr uint32_t client_transactions = 8192;
inline constexpr uint32_t client_secure_connection = 32768;
inline constexpr uint32_t client_multi_statements = 1u << 16;
inline constexpr uint32_t client_multi_results = 1u << 17;
inline constexpr uint32_t client_plugin_auth = 1u << 19;
inline constexpr uint32_t client_connect_attrs = 1u << 20;
inline constexpr uint32_t client_plugin_auth_lenenc = 1u << 21;
inline constexpr uint32_t client_session_track = 1u << 23;
inline constexpr uint32_t client_deprecate_eof = 1u << 24;

enum class decode_status : uint8_t { ok, need_more, error };

/// One logical packet: continuations joined, with the last sequence id.
struct packet {
  uint8_t sequence = 0;
  std::string payload;
};

struct decode_result {
  decode_status status = decode_status::need_more;
  size_t consumed = 0;
  const char* reason = nullptr;
};

/// Takes the next logical packet off the front of input. A payload longer
/// than max_message (after joining) is an error.
decode_result next_packet(std::string_view input, size_t max_message,
                          packet& out);

/// Appends payload as one or more packets starting at sequence seq;
/// returns the next sequence id.
uint8_t frame(std::string& out, std::string_view payload, uint8_t seq);

// -- length-encoded values ----------------------------------------------------

void put_lenenc_int(std::string& out, uint64_t v);
void put_lenenc_string(std::string& out, std::string_view s);
/// Reads a length-encoded integer at pos; nullopt when malformed.
std::optional<uint64_t> read_lenenc_int(std::string_view in, size_t& pos);

// -- handshake ------------------------------------------------------------------

struct handshake_v10 {
  std::string server_version = "8.0.34-QueryFlux";
  uint32_t connection_id = 0;
  std::string scramble; // 20 bytes of random, no NUL
  uint32_t capabilities = 0;
  uint8_t charset = 45; // utf8mb4_general_ci
  uint16_t status = 2;  // SERVER_STATUS_AUTOCOMMIT
  std::string auth_plugin = "mysql_native_password";
};

std::string encode(const handshake_v10& h);

struct handshake_response {
  uint32_t capabilities = 0;
  uint32_t max_packet = 0;
  uint8_t charset = 0;
  std::string user;
  std::string auth_response;
  std::string database;
  std::string auth_plugin;
  bool ssl_request_only = false; // the short packet before a TLS switch
};

std::optional<handshake_response> parse_handshake_response(
  std::string_view payload);

/// SHA1(password) XOR SHA1(scramble + SHA1(SHA1(password))), as the client
/// computes it; empty for an empty password.
std::string native_password_token(std::string_view password,
                                  std::string_view scramble);

// -- commands -----------------------------------------------------------------

struct com_quit {};
struct com_ping {};
struct com_query {
  std::string sql;
};
struct com_init_db {
  std::string database;
};
struct com_field_list {
  std::string table;
};
struct com_stmt_prepare {
  std::string sql;
};
/// COM_STMT_EXECUTE, with its parameter bytes still undecoded: their
/// layout depends on how many parameters the statement has (binary.hpp).
struct com_stmt_execute {
  uint32_t statement = 0;
  uint8_t flags = 0;
  std::string params; // everything after the iteration count
};
struct com_stmt_send_long_data {
  uint32_t statement = 0;
};
struct com_stmt_close {
  uint32_t statement = 0;
};
struct com_stmt_reset {
  uint32_t statement = 0;
};
/// COM_RESET_CONNECTION: the session as new, the login and database kept.
struct com_reset_connection {};
/// COM_CHANGE_USER: a new login on the same connection (PHP's persistent
/// connections, mysql2's changeUser()), the session as new.
struct com_change_user {
  std::string user;
  std::string auth_response;
  std::string database;
  std::string auth_plugin;
};
struct com_unknown {
  uint8_t code = 0;
};

using command
  = std::variant<com_quit, com_ping, com_query, com_init_db, com_field_list,
                 com_stmt_prepare, com_stmt_execute, com_stmt_send_long_data,
                 com_stmt_close, com_stmt_reset, com_reset_connection, com_change_user,
                 com_unknown>;

/// Parses a command packet; nullopt for an empty or malformed one.
/// `capabilities`: what the client logged in with, which COM_CHANGE_USER's
/// layout depends on.
std::optional<command> parse_command(std::string_view payload,
                                     uint32_t capabilities = client_protocol_41
                                                             | client_secure_connection
                                                             | client_plugin_auth);

// -- server messages ------------------------------------------------------------

/// info: the server's human-readable summary ("Rows matched: 1  Changed:
/// 0  Warnings: 0"), which clients parse (mysql2's changedRows).
std::string ok_packet(uint64_t affected_rows, uint64_t last_insert_id,
                      uint16_t status, uint16_t warnings, std::string_view info = {});
std::string err_packet(uint16_t code, std::string_view sqlstate,
                       std::string_view message);
std::string eof_packet(uint16_t status, uint16_t warnings);

/// A result column as a MySQL server described it: its ColumnDefinition41
/// payload, passed on whole (names, table, charset, flags, the server's
/// own type: JSON, BIGINT UNSIGNED, ENUM...), and what binary rows of it
/// are encoded by.
struct server_field {
  std::string definition;
  uint8_t type = 253; // VAR_STRING
  bool is_unsigned = false;
};

/// A ColumnDefinition41 payload of the given parts.
struct field_parts {
  std::string_view db, table, org_table, name, org_name;
  uint16_t charset = 45;
  uint32_t length = 0;
  uint8_t type = 253;
  uint16_t flags = 0;
  uint8_t decimals = 0;
};
server_field server_field_of(const field_parts& f);

/// MySQL column type codes for our types.
uint8_t column_type(const sql_type& t);

std::string column_definition(const column& c);

/// One text-protocol row: NULL as 0xFB, other cells length-encoded.
std::string text_row(const std::vector<column>& cols, const row_batch& batch,
                     size_t row);

} // namespace qf::mysqlwire
