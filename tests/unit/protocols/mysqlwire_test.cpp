// MySQL wire codec: framing with continuation packets, length-encoded
// values, the handshake both ways, commands, and server messages.
#include "protocols/mysqlwire/little_endian.hpp"
#include "protocols/mysqlwire/packets.hpp"
#include "protocols/mysqlwire/session.hpp"

#include <gtest/gtest.h>

using namespace qf;
using namespace qf::mysqlwire;
using qf::sql::transaction_step;

namespace {

std::string le_bytes(uint64_t v, int n) {
  std::string out;
  put_le(out, v, n);
  return out;
}

/// The fixed start of a HandshakeResponse41 (all of an SSL request):
/// capabilities, max packet size, charset, filler.
std::string handshake_start(uint32_t capabilities) {
  return le_bytes(capabilities, 4) + le_bytes(1 << 24, 4) + '\x2d' + std::string(23, '\0');
}

/// The short HandshakeResponse that asks for TLS, framed.
std::string ssl_request() {
  std::string wire;
  frame(wire, handshake_start(client_protocol_41 | client_ssl | client_secure_connection), 1);
  return wire;
}

std::string hex(std::string_view s) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += digits[c >> 4];
    out += digits[c & 0xF];
  }
  return out;
}

} // namespace

TEST(mysqlwire_packets, frame_and_decode_round_trip_with_prefixes) {
  std::string wire;
  auto next = frame(wire, "\x03SELECT 1", 0);
  EXPECT_EQ(next, 1);
  EXPECT_EQ(hex(wire.substr(0, 4)), "09000000");
  for (size_t n = 0; n < wire.size(); ++n) {
    packet p;
    EXPECT_EQ(next_packet(std::string_view{wire}.substr(0, n), 1 << 20, p)
                .status,
              decode_status::need_more)
      << n;
  }
  packet p;
  auto r = next_packet(wire, 1 << 20, p);
  ASSERT_EQ(r.status, decode_status::ok);
  EXPECT_EQ(r.consumed, wire.size());
  EXPECT_EQ(p.payload, "\x03SELECT 1");
  EXPECT_EQ(p.sequence, 0);
}

TEST(mysqlwire_packets, payloads_of_16_mib_continue_in_the_next_packet) {
  std::string big(max_payload + 10, 'x');
  std::string wire;
  EXPECT_EQ(frame(wire, big, 0), 2); // two packets: full, then 10 bytes
  std::string exact(max_payload, 'y');
  std::string wire2;
  EXPECT_EQ(frame(wire2, exact, 5), 7); // full, then an empty one
  EXPECT_EQ(wire2.size(), max_payload + 8);
  packet p;
  auto r = next_packet(wire, 32 << 20, p);
  ASSERT_EQ(r.status, decode_status::ok);
  EXPECT_EQ(p.payload.size(), big.size());
  EXPECT_EQ(p.sequence, 1);
  r = next_packet(wire2, 32 << 20, p);
  ASSERT_EQ(r.status, decode_status::ok);
  EXPECT_EQ(p.payload, exact);
  // Over the message limit: an error, not an allocation.
  EXPECT_EQ(next_packet(wire, 1 << 20, p).status, decode_status::error);
}

TEST(mysqlwire_packets, length_encoded_integers_round_trip) {
  for (uint64_t v : {0ull, 250ull, 251ull, 65535ull, 65536ull, 16777215ull,
                     16777216ull, ~0ull}) {
    std::string out;
    put_lenenc_int(out, v);
    size_t pos = 0;
    EXPECT_EQ(read_lenenc_int(out, pos), v) << v;
    EXPECT_EQ(pos, out.size());
  }
  size_t pos = 0;
  EXPECT_FALSE(read_lenenc_int("\xfc\x01", pos)); // truncated
  pos = 0;
  EXPECT_FALSE(read_lenenc_int("\xfb", pos)); // NULL marker
}

TEST(mysqlwire_handshake, greeting_carries_version_scramble_and_plugin) {
  handshake_v10 h;
  h.connection_id = 7;
  h.scramble = std::string(20, 'a');
  h.capabilities = client_protocol_41 | client_plugin_auth
                   | client_secure_connection;
  auto g = encode(h);
  EXPECT_EQ(g[0], '\x0a');
  EXPECT_NE(g.find("8.0.34-QueryFlux"), std::string::npos);
  EXPECT_NE(g.find("mysql_native_password"), std::string::npos);
  EXPECT_EQ(g.back(), '\0');
}

TEST(mysqlwire_handshake, response41_is_parsed) {
  auto in = handshake_start(client_protocol_41 | client_secure_connection
                            | client_connect_with_db | client_plugin_auth);
  in += std::string("alice\0", 6);
  in += '\x14';
  in += std::string(20, 'T');
  in += std::string("demo\0", 5);
  in += std::string("mysql_native_password\0", 22);
  auto r = parse_handshake_response(in);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->user, "alice");
  EXPECT_EQ(r->auth_response, std::string(20, 'T'));
  EXPECT_EQ(r->database, "demo");
  EXPECT_EQ(r->auth_plugin, "mysql_native_password");
  EXPECT_FALSE(r->ssl_request_only);
  // Truncated or pre-4.1 responses are refused.
  EXPECT_FALSE(parse_handshake_response(in.substr(0, 40)));
  std::string old = in;
  old[1] = 0; // drop CLIENT_PROTOCOL_41
  EXPECT_FALSE(parse_handshake_response(old));
}

TEST(mysqlwire_handshake, native_password_token_matches_the_algorithm) {
  std::string scramble;
  for (char c = 1; c <= 20; ++c)
    scramble += c;
  EXPECT_EQ(hex(native_password_token("s3cret", scramble)),
            "f66fdd3ff855d9349a0ddb50c4a1a535fb412465");
  EXPECT_EQ(native_password_token("", scramble), "");
}

TEST(mysqlwire_commands, are_parsed) {
  EXPECT_TRUE(std::holds_alternative<com_quit>(*parse_command("\x01")));
  EXPECT_TRUE(std::holds_alternative<com_ping>(*parse_command("\x0e")));
  EXPECT_EQ(std::get<com_query>(*parse_command("\x03SELECT 1")).sql,
            "SELECT 1");
  EXPECT_EQ(std::get<com_init_db>(*parse_command("\x02" "demo")).database,
            "demo");
  EXPECT_EQ(std::get<com_stmt_close>(*parse_command(std::string("\x19\x05\0\0\0",
                                                                5)))
              .statement,
            5u);
  EXPECT_EQ(std::get<com_unknown>(*parse_command("\x7f")).code, 0x7f);
  EXPECT_FALSE(parse_command(""));
  EXPECT_FALSE(parse_command("\x19\x01"));
}

TEST(mysqlwire_server, ok_err_eof_and_rows) {
  EXPECT_EQ(hex(ok_packet(3, 0, 2, 0)), "00030002000000");
  EXPECT_EQ(err_packet(1064, "42000", "syntax"),
            std::string("\xff\x28\x04#42000syntax"));
  EXPECT_EQ(hex(eof_packet(2, 0)), "fe00000200");
  std::vector<column> cols{{"n", {type_id::bigint}},
                           {"s", {type_id::varchar}},
                           {"b", {type_id::boolean}}};
  row_batch rows;
  rows.width = 3;
  rows.cells = {"42", std::nullopt, "true"};
  EXPECT_EQ(text_row(cols, rows, 0), std::string("\x02" "42\xfb\x01" "1"));
  auto def = column_definition(cols[0]);
  EXPECT_NE(def.find("\x01n\x01n"), std::string::npos);
  EXPECT_EQ(column_type({type_id::decimal, 10, 2}), 246);
}

// -- the session state machine ------------------------------------------------

#include "protocols/mysqlwire/session.hpp"

namespace {

/// The payloads (and sequence ids) of the packets in out.
std::vector<packet> packets_of(const std::string& out) {
  std::vector<packet> result;
  std::string_view rest = out;
  while (!rest.empty()) {
    packet p;
    auto r = next_packet(rest, 1 << 24, p);
    if (r.status != decode_status::ok)
      break;
    result.push_back(p);
    rest.remove_prefix(r.consumed);
  }
  return result;
}

std::string login_packet(const std::string& user, const std::string& plugin,
                         uint8_t seq = 1) {
  auto in = handshake_start(client_protocol_41 | client_secure_connection
                            | client_plugin_auth | client_connect_with_db);
  in += user;
  in += '\0';
  in += '\x14';
  in += std::string(20, 'T');
  in += "demo";
  in += '\0';
  in += plugin;
  in += '\0';
  std::string wire;
  frame(wire, in, seq);
  return wire;
}

std::string command_packet(std::string_view payload) {
  std::string wire;
  frame(wire, payload, 0);
  return wire;
}

server_session logged_in(session_options opts = {7, std::string(20, 's')}) {
  server_session s{std::move(opts)};
  s.take_output();
  s.feed(login_packet("alice", "mysql_native_password"));
  s.next_event();
  s.accept();
  s.take_output();
  return s;
}

} // namespace

TEST(mysqlwire_session, greets_then_logs_in_with_the_client_token) {
  server_session s{{7, std::string(20, 's')}};
  auto greeting = packets_of(s.take_output());
  ASSERT_EQ(greeting.size(), 1u);
  EXPECT_EQ(greeting[0].sequence, 0);
  EXPECT_EQ(greeting[0].payload[0], '\x0a');
  s.feed(login_packet("alice", "mysql_native_password"));
  auto ev = s.next_event();
  ASSERT_TRUE(ev);
  auto& login = std::get<login_event>(*ev);
  EXPECT_EQ(login.user, "alice");
  EXPECT_EQ(login.auth_response, std::string(20, 'T'));
  EXPECT_EQ(login.database, "demo");
  s.accept();
  auto ok = packets_of(s.take_output());
  ASSERT_EQ(ok.size(), 1u);
  EXPECT_EQ(ok[0].sequence, 2);
  EXPECT_EQ(ok[0].payload[0], '\0');
}

TEST(mysqlwire_session, another_plugin_is_switched_to_native_password) {
  server_session s{{7, std::string(20, 's')}};
  s.take_output();
  s.feed(login_packet("bob", "caching_sha2_password"));
  EXPECT_FALSE(s.next_event());
  auto sw = packets_of(s.take_output());
  ASSERT_EQ(sw.size(), 1u);
  EXPECT_EQ(sw[0].payload[0], '\xfe');
  EXPECT_NE(sw[0].payload.find("mysql_native_password"), std::string::npos);
  std::string token;
  frame(token, std::string(20, 'N'), 3);
  s.feed(token);
  auto ev = s.next_event();
  ASSERT_TRUE(ev);
  EXPECT_EQ(std::get<login_event>(*ev).auth_response, std::string(20, 'N'));
}

TEST(mysqlwire_session, an_ssl_request_without_tls_gets_a_clear_error) {
  server_session s{{7, std::string(20, 's')}};
  s.take_output();
  s.feed(ssl_request());
  auto out = packets_of(s.take_output());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].payload[0], '\xff');
  EXPECT_NE(out[0].payload.find("TLS is not configured"), std::string::npos);
  EXPECT_TRUE(s.closing());
  EXPECT_FALSE(s.next_event());
}

TEST(mysqlwire_session, with_tls_an_ssl_request_starts_the_handshake_then_login_goes_on) {
  session_options opts{7, std::string(20, 's')};
  opts.tls_available = true;
  server_session s{opts};
  auto greeting = packets_of(s.take_output());
  ASSERT_EQ(greeting.size(), 1u);
  s.feed(ssl_request());
  auto ev = s.next_event();
  ASSERT_TRUE(ev && std::holds_alternative<tls_event>(*ev));
  EXPECT_TRUE(s.take_output().empty());
  s.tls_started();
  EXPECT_TRUE(s.tls_active());
  s.feed(login_packet("alice", "mysql_native_password", 2));
  ev = s.next_event();
  ASSERT_TRUE(ev);
  EXPECT_EQ(std::get<login_event>(*ev).user, "alice");
  s.accept();
  auto ok = packets_of(s.take_output());
  ASSERT_EQ(ok.size(), 1u);
  EXPECT_EQ(ok[0].sequence, 3);
}

TEST(mysqlwire_session, a_client_hello_sent_with_the_ssl_request_goes_to_the_handshake) {
  session_options opts{7, std::string(20, 's')};
  opts.tls_available = true;
  server_session s{opts};
  s.take_output();
  s.feed(ssl_request() + "\x16\x03\x01hello"); // MySQL clients do not wait
  auto ev = s.next_event();
  ASSERT_TRUE(ev && std::holds_alternative<tls_event>(*ev));
  EXPECT_EQ(std::get<tls_event>(*ev).received, "\x16\x03\x01hello");
  EXPECT_TRUE(s.take_output().empty());
  EXPECT_FALSE(s.closing());
}

TEST(mysqlwire_session, a_rejected_login_gets_err_and_closes) {
  server_session s{{7, std::string(20, 's')}};
  s.take_output();
  s.feed(login_packet("eve", "mysql_native_password"));
  s.next_event();
  s.reject({1045, "28000", "Access denied for user 'eve'"});
  auto err = packets_of(s.take_output());
  ASSERT_EQ(err.size(), 1u);
  EXPECT_EQ(err[0].payload.substr(0, 3), "\xff\x15\x04");
  EXPECT_TRUE(s.closing());
}

TEST(mysqlwire_session, a_query_result_is_columns_eof_rows_eof) {
  auto s = logged_in();
  s.feed(command_packet("\x03SELECT 1 AS x"));
  auto ev = s.next_event();
  ASSERT_TRUE(ev);
  EXPECT_EQ(std::get<query_event>(*ev).sql, "SELECT 1 AS x");
  s.columns({{"x", {type_id::integer}}});
  row_batch rows{1, {std::string{"1"}}};
  s.rows(rows);
  s.complete(-1);
  auto out = packets_of(s.take_output());
  ASSERT_EQ(out.size(), 5u); // count, definition, EOF, row, EOF
  for (size_t i = 0; i < out.size(); ++i)
    EXPECT_EQ(out[i].sequence, i + 1);
  EXPECT_EQ(out[0].payload, "\x01");
  EXPECT_EQ(out[2].payload[0], '\xfe');
  EXPECT_EQ(out[3].payload, "\x01" "1");
}

TEST(mysqlwire_session, commands_without_rows_get_ok_with_affected_rows) {
  auto s = logged_in();
  s.feed(command_packet("\x03INSERT INTO t VALUES (1), (2)"));
  s.next_event();
  s.columns({});
  s.complete(2);
  auto out = packets_of(s.take_output());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].payload.substr(0, 2), std::string("\0\x02", 2));
}

TEST(mysqlwire_session, connect_time_questions_are_answered_here) {
  auto s = logged_in();
  s.feed(command_packet("\x03select @@version_comment limit 1"));
  EXPECT_FALSE(s.next_event());
  auto out = packets_of(s.take_output());
  ASSERT_EQ(out.size(), 5u);
  EXPECT_NE(out[3].payload.find("QueryFlux"), std::string::npos);
  s.feed(command_packet("\x03SELECT @@max_allowed_packet AS mp"));
  out = packets_of(s.take_output());
  ASSERT_EQ(out.size(), 5u);
  EXPECT_NE(out[1].payload.find("\x02mp"), std::string::npos); // named by its alias
  EXPECT_NE(out[3].payload.find("16777216"), std::string::npos);
  s.feed(command_packet("\x03SELECT DATABASE()"));
  out = packets_of(s.take_output());
  ASSERT_EQ(out.size(), 5u);
  EXPECT_NE(out[3].payload.find("demo"), std::string::npos);
  s.feed(command_packet("\x03SET NAMES utf8mb4"));
  EXPECT_EQ(packets_of(s.take_output())[0].payload[0], '\0');
  s.feed(command_packet("\x0e")); // COM_PING
  EXPECT_EQ(packets_of(s.take_output())[0].payload[0], '\0');
  s.feed(command_packet("\x02other")); // COM_INIT_DB
  s.take_output();
  EXPECT_EQ(s.database(), "other");
  // A query mixing variables and tables goes to the engine.
  s.feed(command_packet("\x03SELECT @@version, x FROM t"));
  EXPECT_TRUE(s.next_event());
}

TEST(mysqlwire_session, kill_names_a_connection_of_ours) {
  auto s = logged_in();
  s.feed(command_packet("\x03KILL QUERY 42"));
  auto ev = s.next_event();
  ASSERT_TRUE(ev);
  EXPECT_EQ(std::get<kill_event>(*ev).connection_id, 42u);
  EXPECT_TRUE(std::get<kill_event>(*ev).query_only);
  s.complete(0);
  EXPECT_EQ(packets_of(s.take_output())[0].payload[0], '\0');
  s.feed(command_packet("\x03kill 7;"));
  ev = s.next_event();
  ASSERT_TRUE(ev);
  EXPECT_EQ(std::get<kill_event>(*ev).connection_id, 7u);
  EXPECT_FALSE(std::get<kill_event>(*ev).query_only);
  s.fail({1094, "HY000", "Unknown thread id: 7"});
  s.take_output();
  s.feed(command_packet("\x03KILL CONNECTION x"));
  EXPECT_FALSE(s.next_event());
  EXPECT_EQ(packets_of(s.take_output())[0].payload.substr(0, 3), "\xff\x28\x04");
  for (auto [sql, query_only] : {std::pair{"KILL QUERY ID 9", true}, {"kill hard query 9", true},
                                 {"KILL SOFT CONNECTION 9", false}, {"KILL HARD 9 /* now */", false}}) {
    s.feed(command_packet(std::string("\x03") + sql));
    ev = s.next_event();
    ASSERT_TRUE(ev) << sql;
    EXPECT_EQ(std::get<kill_event>(*ev).connection_id, 9u) << sql;
    EXPECT_EQ(std::get<kill_event>(*ev).query_only, query_only) << sql;
    s.complete(0);
    s.take_output();
  }
}

TEST(mysqlwire_session, errors_keep_the_session_and_quit_closes) {
  auto s = logged_in();
  s.feed(command_packet("\x03SELEC 1"));
  s.next_event();
  s.fail({1064, "42000", "syntax error"});
  auto out = packets_of(s.take_output());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].payload[0], '\xff');
  EXPECT_FALSE(s.closing());
  s.feed(command_packet(std::string("\x17\x63\0\0\0\0\x01\0\0\0", 10)));
  EXPECT_EQ(packets_of(s.take_output())[0].payload.substr(0, 3), "\xff\xdb\x04")
    << "an unknown statement id is ER_UNKNOWN_STMT_HANDLER";
  s.feed(command_packet("\x01"));
  EXPECT_TRUE(s.closing());
}

// -- prepared statements and the binary protocol ---------------------------------

namespace {

/// COM_STMT_EXECUTE of statement `id` with new parameter types.
std::string execute_packet(uint32_t id, std::string_view nulls,
                           std::string_view types, std::string_view values) {
  std::string p = "\x17" + le_bytes(id, 4) + std::string(1, '\0') + le_bytes(1, 4);
  p += nulls;
  p += '\x01';
  p += types;
  p += values;
  return command_packet(p);
}

} // namespace

TEST(mysqlwire_session, prepare_declares_parameters_and_execute_binds_them) {
  auto s = logged_in();
  s.feed(command_packet("\x16SELECT ? AS a, '?' AS q, ? AS b, ? AS c"));
  auto prep = packets_of(s.take_output());
  ASSERT_EQ(prep.size(), 5u); // OK, three parameter definitions, EOF
  ASSERT_EQ(prep[0].payload.size(), 12u);
  EXPECT_EQ(prep[0].payload[0], '\0');
  auto id = static_cast<uint32_t>(static_cast<unsigned char>(prep[0].payload[1]));
  EXPECT_EQ(prep[0].payload.substr(5, 4), std::string("\0\0\x03\0", 4));
  EXPECT_EQ(prep[4].payload[0], '\xfe');

  // a: LONGLONG -5, b: NULL, c: VAR_STRING "héllo"
  std::string types = std::string("\x08\0\x06\0\xfd\0", 6);
  std::string values = le_bytes(static_cast<uint64_t>(-5), 8) + "\x06héllo";
  s.feed(execute_packet(id, "\x02", types, values));
  auto ev = s.next_event();
  ASSERT_TRUE(ev);
  auto& q = std::get<query_event>(*ev);
  EXPECT_EQ(q.sql, "SELECT $1 AS a, '?' AS q, $2 AS b, $3 AS c");
  ASSERT_EQ(q.params.size(), 3u);
  EXPECT_EQ(q.params[0], "-5");
  EXPECT_FALSE(q.params[1]);
  EXPECT_EQ(q.params[2], "héllo");

  // The result comes back in binary rows.
  s.columns({{"i", {type_id::integer}}, {"n", {type_id::varchar}},
             {"d", {type_id::double_precision}}, {"t", {type_id::timestamp}}});
  row_batch rows{4, {std::string{"258"}, std::nullopt, std::string{"1.5"},
                     std::string{"2024-02-29 13:14:15.000250"}}};
  s.rows(rows);
  s.complete(-1);
  auto out = packets_of(s.take_output());
  ASSERT_EQ(out.size(), 8u); // count, 4 definitions, EOF, row, EOF
  const auto& row = out[6].payload;
  std::string expected("\0\x08", 2);                 // header, NULL bit of column 2
  expected += le_bytes(258, 4);                        // LONG
  expected += le_bytes(0x3FF8000000000000ull, 8);      // DOUBLE 1.5
  expected += "\x0b" + le_bytes(2024, 2) + "\x02\x1d\x0d\x0e\x0f" + le_bytes(250, 4);
  EXPECT_EQ(hex(row), hex(expected));

  // A second execute may leave the types out: the first ones hold.
  std::string again = "\x17" + le_bytes(id, 4) + std::string(1, '\0') + le_bytes(1, 4)
                      + std::string(2, '\0') // no NULLs, types not bound again
                      + le_bytes(7, 8) + "\x01x";
  s.feed(command_packet(again));
  ev = s.next_event();
  ASSERT_TRUE(ev);
  EXPECT_EQ(std::get<query_event>(*ev).params[0], "7");
  EXPECT_FALSE(std::get<query_event>(*ev).params[1]); // bound as type NULL
  EXPECT_EQ(std::get<query_event>(*ev).params[2], "x");
  s.complete(0);
  s.take_output();

  // Closed statements are gone.
  s.feed(command_packet("\x19" + le_bytes(id, 4)));
  EXPECT_TRUE(s.take_output().empty());
  s.feed(execute_packet(id, "\0", types, values));
  EXPECT_EQ(packets_of(s.take_output())[0].payload[0], '\xff');
}

TEST(mysqlwire_session, malformed_execute_parameters_are_an_error_not_a_crash) {
  auto s = logged_in();
  s.feed(command_packet("\x16SELECT ?"));
  auto id = static_cast<uint32_t>(static_cast<unsigned char>(packets_of(s.take_output())[0].payload[1]));
  s.feed(execute_packet(id, "\0", std::string("\xfd\0", 2), "\x09short"));
  auto out = packets_of(s.take_output());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].payload.substr(0, 3), "\xff\xba\x04"); // 1210
  EXPECT_FALSE(s.next_event());
  EXPECT_FALSE(s.closing());
}

TEST(mysqlwire_session, long_data_is_refused_at_execute_and_reset_clears_it) {
  auto s = logged_in();
  s.feed(command_packet("\x16SELECT ?"));
  auto id = static_cast<uint32_t>(static_cast<unsigned char>(packets_of(s.take_output())[0].payload[1]));
  s.feed(command_packet("\x18" + le_bytes(id, 4) + le_bytes(0, 2) + "chunk"));
  EXPECT_TRUE(s.take_output().empty()) << "SEND_LONG_DATA has no reply";
  auto exec = execute_packet(id, std::string(1, '\0'), std::string("\xfd\0", 2), "\x01x");
  s.feed(exec);
  auto out = packets_of(s.take_output());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].payload.substr(0, 3), "\xff\xd3\x04"); // 1235
  EXPECT_FALSE(s.next_event());
  s.feed(command_packet("\x16SELECT ?")); // a second statement, then reset of the first
  s.take_output();
  s.feed(command_packet("\x18" + le_bytes(id, 4) + le_bytes(0, 2) + "chunk"));
  s.feed(command_packet("\x1a" + le_bytes(id, 4)));
  EXPECT_EQ(packets_of(s.take_output())[0].payload[0], '\0'); // OK
  s.feed(exec);
  auto ev = s.next_event();
  ASSERT_TRUE(ev);
  EXPECT_EQ(std::get<query_event>(*ev).params[0], "x");
  s.feed(command_packet("\x1a" + le_bytes(999, 4)));
  s.complete(-1);
  EXPECT_EQ(packets_of(s.take_output()).back().payload.substr(0, 3), "\xff\xdb\x04"); // 1243
}

TEST(mysqlwire_session, a_connection_holds_a_bounded_number_of_prepared_statements) {
  auto s = logged_in();
  size_t refused = 0;
  for (int i = 0; i < 1100; ++i) {
    s.feed(command_packet("\x16SELECT 1"));
    auto out = packets_of(s.take_output());
    ASSERT_FALSE(out.empty());
    if (out[0].payload[0] == '\xff') {
      EXPECT_EQ(out[0].payload.substr(0, 3), "\xff\xb5\x05"); // 1461
      ++refused;
    }
  }
  EXPECT_EQ(refused, 1100u - 1024u);
}

TEST(mysqlwire_session, a_connection_holds_a_bounded_size_of_prepared_statements) {
  session_options opts{7, std::string(20, 's')};
  opts.max_prepared_bytes = 100;
  auto s = logged_in(opts);
  auto prepare = [&](size_t length) {
    s.feed(command_packet("\x16SELECT '" + std::string(length, 'x') + "'"));
    return packets_of(s.take_output()).at(0).payload;
  };
  EXPECT_EQ(prepare(50)[0], '\0');
  EXPECT_EQ(prepare(50).substr(0, 3), "\xff\xb5\x05"); // 1461: over 100 bytes
  s.feed(command_packet(std::string("\x19\x01\0\0\0", 5))); // COM_STMT_CLOSE of the first
  EXPECT_EQ(prepare(50)[0], '\0');
}

TEST(mysqlwire_binary, parameter_types_decode_to_text) {
  std::vector<param_type> types;
  std::string bytes(1, '\0'); // no NULLs
  bytes += '\x01';
  for (uint8_t code : {1, 2, 3, 4, 5, 10, 12, 11})
    bytes += std::string{static_cast<char>(code), code == 2 ? '\x80' : '\0'};
  bytes += "\xff";                                  // TINY -1
  bytes += le_bytes(65535, 2);                      // SHORT unsigned 65535
  bytes += le_bytes(static_cast<uint32_t>(-7), 4);  // LONG -7
  bytes += le_bytes(0x3FC00000, 4);                 // FLOAT 1.5
  bytes += le_bytes(0x400921FB54442D18ull, 8);      // DOUBLE pi
  bytes += "\x04" + le_bytes(2024, 2) + "\x02\x1d"; // DATE
  bytes += "\x07" + le_bytes(1999, 2) + "\x0c\x1f\x17\x3b\x3b"; // DATETIME
  bytes += std::string("\x08\x01", 2) + le_bytes(1, 4) + "\x02\x03\x04"; // TIME -26:03:04
  auto v = decode_parameters(bytes, 8, types);
  ASSERT_TRUE(v);
  std::vector<std::optional<std::string>> expected{
    "-1", "65535", "-7", "1.5", "3.141592653589793", "2024-02-29",
    "1999-12-31 23:59:59", "-26:03:04"};
  EXPECT_EQ(*v, expected);
}

namespace {

/// The status flags of an OK packet whose counts fit in one byte each.
uint16_t ok_status(const packet& p) {
  return static_cast<uint16_t>(static_cast<uint8_t>(p.payload[3])
                               | static_cast<uint8_t>(p.payload[4]) << 8);
}

constexpr uint16_t in_trans = 1;
constexpr uint16_t autocommit = 2;

/// Runs the next event as a command without rows; returns it.
query_event run_command(server_session& s) {
  auto ev = std::get<query_event>(*s.next_event());
  s.columns({});
  s.complete(0);
  return ev;
}

} // namespace

TEST(mysqlwire_session, transaction_blocks_pin_and_report_in_trans) {
  auto s = logged_in();
  s.feed(command_packet("\x03START TRANSACTION"));
  EXPECT_EQ(run_command(s).step, transaction_step::begin);
  EXPECT_EQ(ok_status(packets_of(s.take_output()).at(0)), in_trans | autocommit);
  s.feed(command_packet("\x03INSERT INTO t VALUES (1)"));
  EXPECT_EQ(run_command(s).step, transaction_step::inside);
  s.feed(command_packet("\x03ROLLBACK TO SAVEPOINT a"));
  EXPECT_EQ(run_command(s).step, transaction_step::inside);
  s.take_output();
  s.feed(command_packet("\x03ROLLBACK"));
  EXPECT_EQ(run_command(s).step, transaction_step::end);
  EXPECT_EQ(ok_status(packets_of(s.take_output()).at(0)), autocommit);
  s.feed(command_packet("\x03SELECT 1"));
  EXPECT_EQ(std::get<query_event>(*s.next_event()).step, transaction_step::none);
}

TEST(mysqlwire_session, a_failed_begin_leaves_no_block) {
  auto s = logged_in();
  s.feed(command_packet("\x03" "BEGIN"));
  s.next_event();
  s.fail({1105, "HY000", "no"});
  s.take_output();
  s.feed(command_packet("\x03SELECT 1"));
  EXPECT_EQ(std::get<query_event>(*s.next_event()).step, transaction_step::none);
}

TEST(mysqlwire_session, with_autocommit_off_a_statement_opens_a_block_first) {
  auto s = logged_in();
  s.feed(command_packet("\x03SET SESSION autocommit = OFF"));
  EXPECT_FALSE(s.next_event()); // kept here: the backends are shared
  EXPECT_EQ(ok_status(packets_of(s.take_output()).at(0)), 0);
  s.feed(command_packet("\x03INSERT INTO t VALUES (1)"));
  auto begin = run_command(s); // its OK is not the client's
  EXPECT_EQ(begin.sql, "BEGIN");
  EXPECT_EQ(begin.step, transaction_step::begin);
  EXPECT_TRUE(s.take_output().empty());
  auto insert = std::get<query_event>(*s.next_event());
  EXPECT_EQ(insert.sql, "INSERT INTO t VALUES (1)");
  EXPECT_EQ(insert.step, transaction_step::inside);
  s.columns({});
  s.complete(1);
  auto out = packets_of(s.take_output());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].payload[1], '\x01'); // the insert's own OK
  EXPECT_EQ(ok_status(out[0]), in_trans);
  s.feed(command_packet("\x03" "COMMIT"));
  EXPECT_EQ(run_command(s).step, transaction_step::end);
  s.take_output();
  // A failed implicit begin answers the statement that needed it.
  s.feed(command_packet("\x03SELECT 2"));
  s.next_event();
  s.fail({2013, "HY000", "lost"});
  out = packets_of(s.take_output());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].payload[0], '\xff');
  EXPECT_FALSE(s.next_event());
}

TEST(mysqlwire_session, autocommit_back_on_commits_the_open_block) {
  auto s = logged_in();
  s.feed(command_packet("\x03SET autocommit=0"));
  s.take_output();
  s.feed(command_packet("\x03SELECT @@autocommit"));
  EXPECT_NE(s.take_output().find('0'), std::string::npos);
  s.feed(command_packet("\x03INSERT INTO t VALUES (1)"));
  run_command(s);
  run_command(s);
  s.take_output();
  s.feed(command_packet("\x03SET @@autocommit=1"));
  auto commit = run_command(s);
  EXPECT_EQ(commit.sql, "COMMIT");
  EXPECT_EQ(commit.step, transaction_step::end);
  EXPECT_EQ(ok_status(packets_of(s.take_output()).at(0)), autocommit);
  s.feed(command_packet("\x03SET autocommit=1, sql_mode=''"));
  EXPECT_FALSE(s.next_event()); // nothing open: nothing to commit
}

TEST(mysqlwire_session, the_server_ending_a_block_on_its_own_wins_over_the_words) {
  auto s = logged_in();
  s.feed(command_packet("\x03SET autocommit = 0"));
  s.take_output();
  s.feed(command_packet("\x03UPDATE t SET x = 1"));
  run_command(s); // the implicit BEGIN
  auto update = std::get<query_event>(*s.next_event());
  EXPECT_EQ(update.step, transaction_step::inside);
  s.server_in_transaction(false); // a deadlock: MariaDB rolled the block back
  s.fail({1213, "40001", "Deadlock found when trying to get lock"});
  auto out = packets_of(s.take_output());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].payload[0], '\xff');
  // The next statement opens a new block, as on MySQL.
  s.feed(command_packet("\x03SELECT x FROM t"));
  auto begin = std::get<query_event>(*s.next_event());
  EXPECT_EQ(begin.sql, "BEGIN");
  EXPECT_EQ(begin.step, transaction_step::begin);
}

TEST(mysqlwire_session, reset_connection_rolls_back_and_forgets_settings_and_statements) {
  auto s = logged_in();
  s.feed(command_packet("\x16SELECT ?"));
  s.take_output();
  s.feed(command_packet("\x03SET autocommit = 0"));
  s.take_output();
  s.feed(command_packet("\x03INSERT INTO t VALUES (1)"));
  run_command(s);
  run_command(s);
  s.take_output();
  s.feed(command_packet("\x1f")); // COM_RESET_CONNECTION
  auto rollback = run_command(s);
  EXPECT_EQ(rollback.sql, "ROLLBACK");
  EXPECT_EQ(rollback.step, transaction_step::end);
  auto out = packets_of(s.take_output());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(ok_status(out[0]), autocommit); // autocommit again, no block
  s.feed(command_packet(std::string("\x17\x01\0\0\0\0\x01\0\0\0", 10))); // statement 1 is gone
  EXPECT_EQ(packets_of(s.take_output()).at(0).payload.substr(1, 2), std::string("\xdb\x04", 2)); // 1243
  s.feed(command_packet("\x1f")); // nothing open: answered here
  EXPECT_FALSE(s.next_event());
  EXPECT_EQ(ok_status(packets_of(s.take_output()).at(0)), autocommit);
}

namespace {

/// COM_CHANGE_USER as a client that logged in with secure connection and
/// plugin auth writes it.
std::string change_user_packet(const std::string& user, const std::string& token,
                               const std::string& database, const std::string& plugin) {
  std::string p = "\x11" + user;
  p += '\0';
  p += static_cast<char>(token.size());
  p += token;
  p += database;
  p += '\0';
  p += le_bytes(45, 2); // utf8mb4
  p += plugin;
  p += '\0';
  return command_packet(p);
}

} // namespace

TEST(mysqlwire_session, change_user_logs_in_anew_and_starts_the_session_over) {
  auto s = logged_in();
  s.feed(command_packet("\x16SELECT ?"));
  s.feed(command_packet("\x03SET autocommit = 0"));
  s.take_output();
  s.feed(change_user_packet("bob", std::string(20, 'B'), "sales", "mysql_native_password"));
  auto ev = s.next_event();
  ASSERT_TRUE(ev);
  auto& login = std::get<login_event>(*ev);
  EXPECT_EQ(login.user, "bob");
  EXPECT_EQ(login.auth_response, std::string(20, 'B'));
  EXPECT_EQ(login.database, "sales");
  s.accept();
  auto out = packets_of(s.take_output());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].sequence, 1);
  EXPECT_EQ(ok_status(out[0]), autocommit); // autocommit is on again
  EXPECT_EQ(s.database(), "sales");
  s.feed(command_packet(std::string("\x17\x01\0\0\0\0\x01\0\0\0", 10))); // statement 1 is gone
  EXPECT_EQ(packets_of(s.take_output()).at(0).payload.substr(1, 2), std::string("\xdb\x04", 2));
}

TEST(mysqlwire_session, change_user_rolls_back_an_open_block_before_it_answers) {
  auto s = logged_in();
  s.feed(command_packet("\x03" "BEGIN"));
  run_command(s);
  s.take_output();
  s.feed(change_user_packet("bob", std::string(20, 'B'), "", "mysql_native_password"));
  ASSERT_TRUE(std::holds_alternative<login_event>(*s.next_event()));
  s.accept();
  EXPECT_TRUE(s.take_output().empty()) << "answered before the block rolled back";
  auto rollback = run_command(s);
  EXPECT_EQ(rollback.sql, "ROLLBACK");
  EXPECT_EQ(rollback.step, transaction_step::end);
  auto out = packets_of(s.take_output());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(ok_status(out[0]), autocommit);
}

TEST(mysqlwire_session, change_user_with_another_plugin_is_switched_and_a_refusal_closes) {
  auto s = logged_in();
  s.feed(change_user_packet("carol", std::string(32, 'C'), "", "caching_sha2_password"));
  EXPECT_FALSE(s.next_event());
  auto sw = packets_of(s.take_output());
  ASSERT_EQ(sw.size(), 1u);
  EXPECT_EQ(sw[0].payload[0], '\xfe');
  EXPECT_NE(sw[0].payload.find(std::string(20, 's')), std::string::npos) << "not the greeting's scramble";
  std::string token;
  frame(token, std::string(20, 'N'), static_cast<uint8_t>(sw[0].sequence + 1));
  s.feed(token);
  auto ev = s.next_event();
  ASSERT_TRUE(ev);
  EXPECT_EQ(std::get<login_event>(*ev).user, "carol");
  EXPECT_EQ(std::get<login_event>(*ev).auth_response, std::string(20, 'N'));
  s.reject({1045, "28000", "Access denied for user 'carol'"});
  EXPECT_TRUE(s.closing());
  EXPECT_EQ(packets_of(s.take_output()).at(0).payload[0], '\xff');
}

TEST(mysqlwire_session, a_truncated_change_user_is_an_error_not_a_crash) {
  auto s = logged_in();
  s.feed(command_packet(std::string("\x11" "bob\0\x14" "short", 10)));
  EXPECT_FALSE(s.next_event());
  auto out = packets_of(s.take_output());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].payload[0], '\xff');
  EXPECT_FALSE(s.closing());
}

TEST(mysqlwire_session, a_user_variable_goes_to_the_server_other_sets_stay_here) {
  // The server keeps user variables; the driver keeps the connection that
  // holds them for this client (sql::leaves_session_state).
  auto s = logged_in();
  s.feed(command_packet("\x03SET @v = 'mine'"));
  auto ev = s.next_event();
  ASSERT_TRUE(ev);
  EXPECT_EQ(std::get<query_event>(*ev).sql, "SET @v = 'mine'");
  s.complete(0);
  s.take_output();
  s.feed(command_packet("\x03SET NAMES utf8mb4"));
  EXPECT_FALSE(s.next_event()); // answered here
  EXPECT_EQ(packets_of(s.take_output()).at(0).payload[0], '\0');
}

TEST(mysqlwire_session, server_variables_go_to_an_engine_that_has_them) {
  session_options opts{7, std::string(20, 's')};
  opts.settings_on_server = [](std::string_view sql) {
    return sql.find("elsewhere") == std::string_view::npos;
  };
  auto s = logged_in(opts);
  for (std::string sql : {"SET time_zone = '+09:00'", "SET SESSION sql_mode='ANSI', NAMES utf8mb4",
                          "set @@session.max_statement_time = 5",
                          "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
                          "SELECT @@time_zone, @@session.sql_mode"}) {
    s.feed(command_packet("\x03" + sql));
    auto ev = s.next_event();
    ASSERT_TRUE(ev) << sql;
    EXPECT_EQ(std::get<query_event>(*ev).sql, sql);
    s.complete(0);
    s.take_output();
  }
  // The gateway's own: autocommit, the character set; and any SET where
  // the engine has no such variables.
  s.feed(command_packet("\x03SET autocommit = 1, time_zone = 'UTC'"));
  auto rest = s.next_event();
  ASSERT_TRUE(rest);
  EXPECT_EQ(std::get<query_event>(*rest).sql, "SET time_zone = 'UTC'") << "autocommit stays here";
  s.complete(0);
  s.take_output();
  for (std::string sql : {"SET NAMES utf8mb4", "SET autocommit = 1",
                          "SET character_set_results = NULL", "SET CHARACTER SET utf8",
                          "SET time_zone = 'elsewhere'"}) {
    s.feed(command_packet("\x03" + sql));
    EXPECT_FALSE(s.next_event()) << sql;
    EXPECT_EQ(packets_of(s.take_output()).at(0).payload[0], '\0') << sql;
  }
  s.feed(command_packet("\x03SELECT @@time_zone -- elsewhere"));
  EXPECT_FALSE(s.next_event()); // a result set from here
  s.take_output();
  // autocommit is the gateway's: the server gets its value, the rest is its own.
  for (auto [sql, sent] :
       {std::pair{"SELECT @@autocommit, @@time_zone", "SELECT 1 AS `@@autocommit`, @@time_zone"},
        {"select @@autocommit a, @@in_transaction t", "SELECT 1 AS `a`, @@in_transaction t"},
        {"SELECT @@session.autocommit + 0 AS n, @@sql_mode", "SELECT 1 + 0 AS n, @@sql_mode"}}) {
    s.feed(command_packet(std::string("\x03") + sql));
    auto ev = s.next_event();
    ASSERT_TRUE(ev) << sql;
    EXPECT_EQ(std::get<query_event>(*ev).sql, sent);
    s.complete(0);
    s.take_output();
  }
}

TEST(mysqlwire_session, the_database_changes_once_the_engine_took_the_use) {
  session_options opts{7, std::string(20, 's')};
  opts.settings_on_server = [](std::string_view) { return true; };
  auto s = logged_in(opts);
  EXPECT_EQ(s.database(), "demo");
  s.feed(command_packet("\x02reports")); // COM_INIT_DB: the server checks it exists
  auto ev = s.next_event();
  ASSERT_TRUE(ev);
  EXPECT_EQ(std::get<query_event>(*ev).sql, "USE `reports`");
  EXPECT_EQ(s.database(), "demo") << "not before the server said yes";
  s.complete(0);
  EXPECT_EQ(packets_of(s.take_output()).at(0).payload[0], '\0');
  EXPECT_EQ(s.database(), "reports");
  s.feed(command_packet("\x03USE nosuch"));
  s.next_event();
  s.fail({1049, "42000", "Unknown database 'nosuch'"});
  EXPECT_EQ(s.database(), "reports");
  s.feed(command_packet("\x03use `a``b`"));
  s.next_event();
  s.complete(0);
  EXPECT_EQ(s.database(), "a`b");
  s.feed(command_packet("\x03SELECT DATABASE()"));
  EXPECT_TRUE(s.next_event()) << "the engine's answer: the database its connection is in";
}

TEST(mysqlwire_session, without_databases_on_the_engine_init_db_is_answered_here) {
  auto s = logged_in();
  s.feed(command_packet("\x02reports"));
  EXPECT_FALSE(s.next_event());
  EXPECT_EQ(s.database(), "reports");
}

// -- several statements in one COM_QUERY -----------------------------------------

namespace {

server_session logged_in_with(uint32_t capabilities) {
  server_session s{{7, std::string(20, 's')}};
  s.take_output();
  auto in = handshake_start(client_protocol_41 | client_secure_connection | capabilities);
  in += "alice";
  in += '\0';
  in += '\x14';
  in += std::string(20, 'T');
  std::string wire;
  frame(wire, in, 1);
  s.feed(wire);
  s.next_event();
  s.accept();
  s.take_output();
  return s;
}

constexpr uint16_t more_results = 8;

uint16_t eof_status(const std::string& payload) {
  return static_cast<uint16_t>(static_cast<uint8_t>(payload[3])
                               | (static_cast<uint8_t>(payload[4]) << 8));
}

} // namespace

TEST(mysqlwire_session, offers_multi_statements) {
  server_session s{{7, std::string(20, 's')}};
  auto greeting = packets_of(s.take_output())[0].payload;
  // version, NUL, connection id, 8 scramble bytes, filler: then the lower
  // capability flags, charset, status, the upper ones
  auto at = greeting.find('\0') + 1 + 4 + 8 + 1;
  auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(greeting[i])); };
  uint32_t capabilities = byte(at) | byte(at + 1) << 8 | byte(at + 5) << 16 | byte(at + 6) << 24;
  EXPECT_NE(capabilities & client_multi_statements, 0u);
  EXPECT_NE(capabilities & client_protocol_41, 0u);
}

TEST(mysqlwire_session, a_script_runs_statement_by_statement_each_result_flagged_more_but_the_last) {
  auto s = logged_in_with(client_multi_statements | client_multi_results);
  s.feed(command_packet("\x03SELECT 1 AS a; SELECT @@version_comment; INSERT INTO t VALUES ('x;y')"));
  auto ev = s.next_event();
  ASSERT_TRUE(ev);
  EXPECT_EQ(std::get<query_event>(*ev).sql, "SELECT 1 AS a");
  EXPECT_FALSE(s.next_event()) << "one statement at a time";
  s.columns({{"a", {type_id::integer}}});
  s.rows(row_batch{1, {std::string{"1"}}});
  s.complete(-1);
  // The second is answered here at once; the third goes to the engine.
  ev = s.next_event();
  ASSERT_TRUE(ev);
  EXPECT_EQ(std::get<query_event>(*ev).sql, " INSERT INTO t VALUES ('x;y')");
  s.columns({});
  s.complete(1);
  auto out = packets_of(s.take_output());
  // count, definition, EOF, row, EOF; count, definition, EOF, row, EOF; OK
  ASSERT_EQ(out.size(), 11u);
  for (size_t i = 0; i < out.size(); ++i)
    EXPECT_EQ(out[i].sequence, i + 1) << "one response: the sequence goes on";
  EXPECT_NE(eof_status(out[4].payload) & more_results, 0);
  EXPECT_NE(eof_status(out[9].payload) & more_results, 0);
  EXPECT_EQ(out[10].payload[0], '\0');
  EXPECT_EQ(out[10].payload[3] & more_results, 0) << "the last result ends the script";
}

TEST(mysqlwire_session, a_failing_statement_ends_the_script) {
  auto s = logged_in_with(client_multi_statements);
  s.feed(command_packet("\x03INSERT INTO t VALUES (1); SELEC 2; INSERT INTO t VALUES (3)"));
  s.next_event();
  s.columns({});
  s.complete(1);
  auto ev = s.next_event();
  ASSERT_TRUE(ev);
  EXPECT_EQ(std::get<query_event>(*ev).sql, " SELEC 2");
  s.fail({1064, "42000", "syntax error"});
  EXPECT_FALSE(s.next_event()) << "nothing after the failure runs";
  auto out = packets_of(s.take_output());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_NE(out[0].payload[3] & more_results, 0);
  EXPECT_EQ(out[1].payload[0], '\xff');
  s.feed(command_packet("\x03SELECT 4"));
  ev = s.next_event();
  ASSERT_TRUE(ev);
  EXPECT_EQ(std::get<query_event>(*ev).sql, "SELECT 4") << "the session goes on";
}

TEST(mysqlwire_session, without_multi_statements_a_script_is_one_statement) {
  auto s = logged_in();
  s.feed(command_packet("\x03SELECT 1; SELECT 2"));
  auto ev = s.next_event();
  ASSERT_TRUE(ev);
  EXPECT_EQ(std::get<query_event>(*ev).sql, "SELECT 1; SELECT 2"); // the engine refuses it, as MySQL
}

TEST(mysqlwire_session, ok_packets_carry_the_insert_id_warnings_and_summary_and_last_insert_id_is_the_sessions) {
  session_options opts{7, std::string(20, 's')};
  opts.settings_on_server = [](std::string_view) { return true; };
  auto s = logged_in(opts); // without CLIENT_FOUND_ROWS: changed rows
  s.feed(command_packet("\x03INSERT INTO t (a) VALUES (1)"));
  s.next_event();
  s.complete(command_result{1, 42, 1, "ignored"});
  auto ok = packets_of(s.take_output()).at(0).payload;
  EXPECT_EQ(ok.substr(0, 3), std::string("\0\x01\x2a", 3)) << "1 row, id 42";
  EXPECT_EQ(ok.substr(5, 2), std::string("\x01\0", 2)) << "one warning";
  EXPECT_EQ(ok.substr(7), "\x07ignored") << "length-encoded, as MariaDB sends it (libmariadb reads it so)";
  s.feed(command_packet("\x03UPDATE t SET a = 1"));
  s.next_event();
  s.complete(command_result{0, 0, 0, "Rows matched: 3  Changed: 0  Warnings: 0"});
  EXPECT_EQ(packets_of(s.take_output()).at(0).payload[1], '\0') << "changed rows";
  s.feed(command_packet("\x03SELECT LAST_INSERT_ID() AS id"));
  EXPECT_FALSE(s.next_event()) << "this session's, answered here";
  auto rows = packets_of(s.take_output());
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[3].payload, "\x02" "42");

  auto found = logged_in_with(client_found_rows);
  found.feed(command_packet("\x03UPDATE t SET a = 1"));
  found.next_event();
  found.complete(command_result{0, 0, 0, "Rows matched: 3  Changed: 0  Warnings: 0"});
  EXPECT_EQ(packets_of(found.take_output()).at(0).payload[1], '\x03') << "matched rows";
}

TEST(mysqlwire_binary, parameter_types_say_how_their_values_are_spliced_in) {
  using qf::sql::literal_kind;
  EXPECT_EQ(literal_kind_of({8, false}), literal_kind::integer); // LONGLONG
  EXPECT_EQ(literal_kind_of({5, false}), literal_kind::real);    // DOUBLE
  EXPECT_EQ(literal_kind_of({253, false}), literal_kind::text);  // VAR_STRING
  EXPECT_EQ(literal_kind_of({246, false}), literal_kind::text);  // NEWDECIMAL, sent as a string
  EXPECT_EQ(literal_kind_of({252, false}), literal_kind::bytes); // BLOB
  EXPECT_EQ(literal_kind_of({12, false}), literal_kind::datetime);
  EXPECT_EQ(literal_kind_of({10, false}), literal_kind::date);
  EXPECT_EQ(literal_kind_of({11, false}), literal_kind::time);
}

TEST(mysqlwire_binary, a_servers_columns_are_passed_on_and_their_cells_encoded_by_its_types) {
  auto id = server_field_of({"app", "t", "t", "id", "id", 63, 20, 8, 32 | 1, 0}); // BIGINT UNSIGNED NOT NULL
  auto j = server_field_of({"app", "t", "t", "j", "j", 45, 1000, 252, 16, 0});   // a BLOB of text
  EXPECT_TRUE(id.is_unsigned);
  EXPECT_EQ(id.type, 8);
  row_batch rows{2, {std::string{"18446744073709551615"}, std::string{"{\"a\":1}"}}};
  auto row = binary_row(std::vector<server_field>{id, j}, rows, 0);
  EXPECT_EQ(row.substr(0, 2), std::string(2, '\0')) << "header, no NULLs";
  EXPECT_EQ(row.substr(2, 8), std::string(8, '\xff')) << "2^64 - 1 in 8 bytes";
  EXPECT_EQ(row.substr(10), std::string("\x07{\"a\":1}"));

  session_options opts{7, std::string(20, 's')};
  auto s = logged_in(opts);
  s.feed(command_packet("\x03SELECT id, j FROM t"));
  s.next_event();
  s.columns({{"id", {type_id::decimal, 20, 0}}, {"j", {type_id::varchar}}}, {id, j});
  s.rows(rows);
  s.complete(-1);
  auto out = packets_of(s.take_output());
  ASSERT_EQ(out.size(), 6u); // count, two definitions, EOF, the row, EOF
  EXPECT_EQ(out[1].payload, id.definition) << "the server's definition, whole";
  EXPECT_EQ(out[2].payload, j.definition);
}

TEST(mysqlwire_session, set_transaction_goes_with_the_next_statement_to_its_connection) {
  session_options opts{7, std::string(20, 's')};
  opts.settings_on_server = [](std::string_view) { return true; };
  auto s = logged_in(opts);
  s.feed(command_packet("\x03SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED"));
  EXPECT_FALSE(s.next_event()) << "kept for the next transaction";
  EXPECT_EQ(packets_of(s.take_output()).at(0).payload[0], '\0');
  s.feed(command_packet("\x03" "BEGIN"));
  auto ev = s.next_event();
  ASSERT_TRUE(ev);
  EXPECT_EQ(std::get<query_event>(*ev).prelude, "SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED");
  s.complete(0);
  s.server_in_transaction(true);
  s.take_output();
  s.feed(command_packet("\x03SET TRANSACTION READ ONLY"));
  ev = s.next_event();
  ASSERT_TRUE(ev) << "inside a block: the server's to refuse";
  EXPECT_EQ(std::get<query_event>(*ev).prelude, "");
}

TEST(mysqlwire_session, found_rows_is_the_sessions_own) {
  session_options opts{7, std::string(20, 's')};
  opts.settings_on_server = [](std::string_view) { return true; };
  auto s = logged_in(opts);
  s.feed(command_packet("\x03SELECT SQL_CALC_FOUND_ROWS a FROM t LIMIT 1"));
  auto ev = s.next_event();
  ASSERT_TRUE(ev);
  EXPECT_TRUE(std::get<query_event>(*ev).counts_found_rows) << "the driver reads the count on its connection";
  s.columns({{"a", {type_id::integer}}});
  s.rows(row_batch{1, {std::string{"1"}}});
  s.found_rows(57);
  s.complete(-1);
  s.take_output();
  s.feed(command_packet("\x03SELECT FOUND_ROWS()"));
  EXPECT_FALSE(s.next_event()) << "answered here";
  EXPECT_EQ(packets_of(s.take_output()).at(3).payload, "\x02" "57");
  s.feed(command_packet("\x03SELECT FOUND_ROWS() * 2 AS twice"));
  ev = s.next_event();
  ASSERT_TRUE(ev);
  EXPECT_EQ(std::get<query_event>(*ev).sql, "SELECT 57 * 2 AS twice");
  s.columns({{"twice", {type_id::bigint}}});
  s.rows(row_batch{1, {std::string{"114"}}});
  s.complete(-1);
  s.take_output();
  s.feed(command_packet("\x03SELECT FOUND_ROWS()"));
  EXPECT_EQ(packets_of(s.take_output()).at(3).payload, "\x01" "1") << "a plain SELECT counts its own rows";
}

TEST(mysqlwire_session, show_warnings_tells_the_last_statements_warnings_or_error_until_the_next) {
  session_options opts{7, std::string(20, 's')};
  opts.settings_on_server = [](std::string_view) { return true; };
  auto s = logged_in(opts);
  auto shown = [&](const char* query) {
    s.feed(command_packet(std::string("\x03") + query));
    EXPECT_FALSE(s.next_event()) << query << ": answered here";
    auto packets = packets_of(s.take_output());
    std::vector<std::string> rows; // between the columns' EOF and the last EOF
    for (size_t i = 5; i + 1 < packets.size(); ++i)
      rows.push_back(packets[i].payload);
    return rows;
  };
  s.feed(command_packet("\x03INSERT INTO t VALUES ('too long')"));
  s.next_event();
  s.warnings({{"Warning", 1265, "Data truncated for column 'v' at row 1"}});
  s.complete(command_result{1, 0, 1, ""});
  s.take_output();
  auto rows = shown("SHOW WARNINGS");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0], "\x07Warning\x04" "1265\x26" "Data truncated for column 'v' at row 1");
  EXPECT_EQ(shown("SHOW WARNINGS").size(), 1u) << "a diagnostic statement keeps them";
  EXPECT_TRUE(shown("SHOW ERRORS").empty());

  s.feed(command_packet("\x03SELECT nope"));
  s.next_event();
  s.fail({1054, "42S22", "Unknown column 'nope' in 'field list'"});
  s.take_output();
  rows = shown("SHOW ERRORS");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].substr(0, 12), "\x05" "Error\x04" "1054\x25");

  s.feed(command_packet("\x03SELECT 1"));
  s.next_event();
  s.complete(command_result{0});
  s.take_output();
  EXPECT_TRUE(shown("SHOW WARNINGS").empty()) << "the next statement has none";
}

TEST(mysqlwire_session, autocommit_is_the_gateways_however_it_is_spelled_and_whatever_else_the_set_assigns) {
  session_options opts{7, std::string(20, 's')};
  opts.settings_on_server = [](std::string_view) { return true; };
  auto s = logged_in(opts);
  for (auto [sql, on] : {std::pair{"SET autocommit = 'OFF'", false}, {"SET autocommit='ON'", true},
                         {"SET autocommit = 0 /* off */", false}, {"SET @@session.autocommit = DEFAULT", true},
                         {"SET autocommit = \"false\"", false}, {"SET autocommit=1 -- on", true}}) {
    s.feed(command_packet(std::string("\x03") + sql));
    EXPECT_FALSE(s.next_event()) << sql;
    EXPECT_EQ(ok_status(packets_of(s.take_output()).at(0)), on ? autocommit : 0) << sql;
  }
  // The rest goes to the server; autocommit stays here.
  for (auto [sql, rest] : {std::pair{"SET autocommit=0, @x=1", "SET @x=1"},
                           {"SET sql_mode = '', autocommit = 0", "SET sql_mode = ''"}}) {
    s.feed(command_packet(std::string("\x03") + sql));
    auto ev = s.next_event();
    ASSERT_TRUE(ev) << sql;
    EXPECT_EQ(std::get<query_event>(*ev).sql, rest);
    s.complete(command_result{0});
    EXPECT_EQ(ok_status(packets_of(s.take_output()).at(0)), 0) << sql;
    s.feed(command_packet("\x03SET autocommit = 1"));
    s.take_output();
  }
}

TEST(mysqlwire_session, set_or_select_of_no_table_opens_no_block_and_quotes_are_kept_whole) {
  session_options opts{7, std::string(20, 's')};
  opts.settings_on_server = [](std::string_view) { return true; };
  auto s = logged_in(opts);
  s.feed(command_packet("\x03SET autocommit = 0"));
  s.take_output();
  // Turned on with the rest: no BEGIN for the SET.
  s.feed(command_packet("\x03SET autocommit = 1, sql_mode = ''"));
  auto ev = s.next_event();
  ASSERT_TRUE(ev);
  EXPECT_EQ(std::get<query_event>(*ev).sql, "SET sql_mode = ''");
  s.complete(0);
  EXPECT_EQ(ok_status(packets_of(s.take_output()).at(0)), autocommit);
  // Off again: a function may write, so its SELECT opens the block.
  s.feed(command_packet("\x03SET autocommit = 0"));
  s.take_output();
  s.feed(command_packet("\x03SELECT add_order(5)"));
  EXPECT_EQ(std::get<query_event>(*s.next_event()).sql, "BEGIN");
  s.complete(0);
  EXPECT_EQ(std::get<query_event>(*s.next_event()).sql, "SELECT add_order(5)");
  s.complete(0);
  s.take_output();
  // In the open block, autocommit on with more: refused, nothing runs.
  s.feed(command_packet("\x03SET autocommit = 1, sql_mode = ''"));
  EXPECT_FALSE(s.next_event());
  EXPECT_EQ(packets_of(s.take_output()).at(0).payload.substr(0, 3), std::string("\xff\xd3\x04", 3)); // 1235
  s.feed(command_packet("\x03SELECT @@autocommit, 'a#b' AS x"));
  EXPECT_EQ(std::get<query_event>(*s.next_event()).sql, "SELECT 0 AS `@@autocommit`, 'a#b' AS x");
  s.complete(0);
  s.take_output();
  s.feed(command_packet("\x03KILL QUERY/**/5"));
  EXPECT_EQ(std::get<kill_event>(*s.next_event()).connection_id, 5u);
  s.complete(0);
  s.take_output();
  // A reset forgets the last statement's error.
  s.feed(command_packet("\x03SELECT nope FROM t"));
  s.next_event();
  s.fail({1054, "42S22", "Unknown column 'nope'"});
  s.take_output();
  s.feed(command_packet("\x1f")); // COM_RESET_CONNECTION: the block rolls back
  s.next_event();
  s.complete(0);
  s.take_output();
  s.feed(command_packet("\x03SHOW ERRORS"));
  EXPECT_EQ(packets_of(s.take_output()).size(), 6u) << "no rows: the count, 3 columns, 2 EOFs";
}
