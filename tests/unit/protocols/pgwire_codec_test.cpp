// PostgreSQL wire codec: framing (every prefix needs more, limits), startup
// packets, client messages, and server messages checked byte for byte.
#include "protocols/common/byte_reader.hpp"
#include "protocols/pgwire/backend.hpp"
#include "protocols/pgwire/frontend.hpp"

#include "protocols/common/temporal.hpp"

#include <gtest/gtest.h>

using namespace qf;
using namespace qf::pgwire;
using namespace qf::byte_writer;

namespace {

std::string startup(const std::vector<std::pair<std::string, std::string>>&
                      params,
                    uint32_t code = protocol_v3) {
  std::string body;
  put_be_u32(body, code);
  for (const auto& [k, v] : params) {
    put_cstring(body, k);
    put_cstring(body, v);
  }
  body += '\0';
  std::string out;
  put_be_u32(out, static_cast<uint32_t>(body.size() + 4));
  return out + body;
}

std::string tagged(char tag, const std::string& body) {
  std::string out(1, tag);
  put_be_u32(out, static_cast<uint32_t>(body.size() + 4));
  return out + body;
}

std::optional<message> decode_one(const std::string& bytes) {
  frame f;
  auto r = next_frame(bytes, false, 1 << 20, f);
  EXPECT_EQ(r.status, decode_status::ok);
  EXPECT_EQ(r.consumed, bytes.size());
  return parse_message(f);
}

} // namespace

TEST(pgwire_frames, every_prefix_needs_more_and_the_whole_decodes) {
  auto bytes = tagged('Q', std::string("SELECT 1\0", 9));
  for (size_t n = 0; n < bytes.size(); ++n) {
    frame f;
    auto r = next_frame(std::string_view{bytes}.substr(0, n), false, 1024, f);
    EXPECT_EQ(r.status, decode_status::need_more) << n;
    // Once the header is in, the frame's whole size is known.
    EXPECT_EQ(r.needed, n < 5 ? 0 : bytes.size()) << n;
  }
  frame f;
  auto r = next_frame(bytes, false, 1024, f);
  ASSERT_EQ(r.status, decode_status::ok);
  EXPECT_EQ(f.tag, 'Q');
  EXPECT_EQ(f.body, std::string_view("SELECT 1\0", 9));
}

TEST(pgwire_frames, two_frames_in_one_buffer_decode_in_turn) {
  auto bytes = tagged('S', "") + tagged('H', "");
  frame f;
  auto r = next_frame(bytes, false, 1024, f);
  ASSERT_EQ(r.status, decode_status::ok);
  EXPECT_EQ(f.tag, 'S');
  r = next_frame(std::string_view{bytes}.substr(r.consumed), false, 1024, f);
  ASSERT_EQ(r.status, decode_status::ok);
  EXPECT_EQ(f.tag, 'H');
}

TEST(pgwire_frames, lengths_below_four_or_over_the_limit_are_errors) {
  std::string bad(1, 'Q');
  put_be_u32(bad, 3);
  frame f;
  EXPECT_EQ(next_frame(bad, false, 1024, f).status, decode_status::error);
  std::string huge(1, 'Q');
  put_be_u32(huge, 2000);
  EXPECT_EQ(next_frame(huge, false, 1024, f).status, decode_status::error);
  std::string big_startup;
  put_be_u32(big_startup, max_startup_length + 1);
  EXPECT_EQ(next_frame(big_startup, true, 1 << 30, f).status,
            decode_status::error);
}

TEST(pgwire_startup, startup_message_with_parameters) {
  auto bytes = startup({{"user", "alice"}, {"database", "bench"},
                        {"application_name", "psql"}});
  frame f;
  ASSERT_EQ(next_frame(bytes, true, 0, f).status, decode_status::ok);
  auto p = parse_startup(f.body);
  ASSERT_TRUE(p);
  auto* m = std::get_if<startup_message>(&*p);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->protocol, protocol_v3);
  EXPECT_EQ(m->params.at("user"), "alice");
  EXPECT_EQ(m->params.at("database"), "bench");
  EXPECT_EQ(m->params.at("application_name"), "psql");
}

TEST(pgwire_startup, ssl_gssenc_and_cancel_requests) {
  std::string ssl;
  put_be_u32(ssl, ssl_request_code);
  EXPECT_TRUE(std::holds_alternative<ssl_request>(*parse_startup(ssl)));
  std::string gss;
  put_be_u32(gss, gssenc_request_code);
  EXPECT_TRUE(std::holds_alternative<gssenc_request>(*parse_startup(gss)));
  std::string cancel;
  put_be_u32(cancel, cancel_request_code);
  put_be_u32(cancel, 1234);
  put_be_u32(cancel, static_cast<uint32_t>(-5));
  auto c = std::get<cancel_request>(*parse_startup(cancel));
  EXPECT_EQ(c.process_id, 1234);
  EXPECT_EQ(c.secret_key, -5);
}

TEST(pgwire_startup, malformed_packets_are_rejected) {
  EXPECT_FALSE(parse_startup(""));
  std::string no_terminator;
  put_be_u32(no_terminator, protocol_v3);
  no_terminator += "user";
  EXPECT_FALSE(parse_startup(no_terminator));
  std::string key_without_value;
  put_be_u32(key_without_value, protocol_v3);
  key_without_value += std::string("user\0", 5);
  EXPECT_FALSE(parse_startup(key_without_value));
  std::string short_cancel;
  put_be_u32(short_cancel, cancel_request_code);
  put_be_u32(short_cancel, 1);
  EXPECT_FALSE(parse_startup(short_cancel));
}

TEST(pgwire_messages, query_parse_bind_describe_execute_close) {
  auto q = decode_one(tagged('Q', std::string("SELECT 1\0", 9)));
  EXPECT_EQ(std::get<query>(*q).sql, "SELECT 1");

  std::string pb;
  put_cstring(pb, "s1");
  put_cstring(pb, "SELECT $1::int");
  put_be_u16(pb, 1);
  put_be_u32(pb, 23);
  auto p = std::get<parse>(*decode_one(tagged('P', pb)));
  EXPECT_EQ(p.statement, "s1");
  EXPECT_EQ(p.sql, "SELECT $1::int");
  EXPECT_EQ(p.param_types, std::vector<uint32_t>{23});

  std::string bb;
  put_cstring(bb, "");
  put_cstring(bb, "s1");
  put_be_u16(bb, 1);
  put_be_u16(bb, 0);
  put_be_u16(bb, 2);
  put_be_u32(bb, 2);
  bb += "42";
  put_be_u32(bb, static_cast<uint32_t>(-1));
  put_be_u16(bb, 1);
  put_be_u16(bb, 1);
  auto b = std::get<bind>(*decode_one(tagged('B', bb)));
  EXPECT_EQ(b.statement, "s1");
  ASSERT_EQ(b.params.size(), 2u);
  EXPECT_EQ(b.params[0], "42");
  EXPECT_FALSE(b.params[1]);
  EXPECT_EQ(b.result_formats, std::vector<int16_t>{1});

  auto d = std::get<describe>(*decode_one(tagged('D', std::string("Ps1\0", 4))));
  EXPECT_EQ(d.kind, 'P');
  EXPECT_EQ(d.name, "s1");

  std::string eb;
  put_cstring(eb, "");
  put_be_u32(eb, 100);
  EXPECT_EQ(std::get<execute>(*decode_one(tagged('E', eb))).max_rows, 100);

  auto c = std::get<pgwire::close>(*decode_one(tagged('C', std::string("Sx\0", 3))));
  EXPECT_EQ(c.kind, 'S');
  EXPECT_TRUE(std::holds_alternative<pgwire::sync>(*decode_one(tagged('S', ""))));
  EXPECT_TRUE(std::holds_alternative<terminate>(*decode_one(tagged('X', ""))));
}

TEST(pgwire_messages, malformed_bodies_and_unknown_tags_are_rejected) {
  EXPECT_FALSE(decode_one(tagged('Q', "no terminator")));
  EXPECT_FALSE(decode_one(tagged('Z', "")));
  EXPECT_FALSE(decode_one(tagged('S', "x")));
  EXPECT_FALSE(decode_one(tagged('D', std::string("Xname\0", 6))));
  std::string bind_lies; // claims 1000 parameters, carries none
  put_cstring(bind_lies, "");
  put_cstring(bind_lies, "");
  put_be_u16(bind_lies, 0);
  put_be_u16(bind_lies, 1000);
  EXPECT_FALSE(decode_one(tagged('B', bind_lies)));
  std::string bind_negative;
  put_cstring(bind_negative, "");
  put_cstring(bind_negative, "");
  put_be_u16(bind_negative, 0);
  put_be_u16(bind_negative, 1);
  put_be_u32(bind_negative, static_cast<uint32_t>(-7));
  EXPECT_FALSE(decode_one(tagged('B', bind_negative)));
}

TEST(pgwire_messages, a_bind_carries_up_to_65535_parameters_as_postgresql_reads_them) {
  std::string b;
  put_cstring(b, "");
  put_cstring(b, "");
  put_be_u16(b, 0);
  put_be_u16(b, 40000); // above int16's range
  for (int i = 0; i < 40000; ++i) {
    put_be_u32(b, 1);
    b += '7';
  }
  put_be_u16(b, 0);
  auto m = decode_one(tagged('B', b));
  ASSERT_TRUE(m);
  EXPECT_EQ(std::get<bind>(*m).params.size(), 40000u);
}

TEST(pgwire_backend, messages_are_framed_with_their_lengths) {
  std::string out;
  ready_for_query(out, 'I');
  EXPECT_EQ(out, std::string("Z\0\0\0\5I", 6));
  out.clear();
  command_complete(out, "SELECT 1");
  EXPECT_EQ(out, std::string("C\0\0\0\015SELECT 1\0", 14));
  out.clear();
  authentication_ok(out);
  EXPECT_EQ(out, std::string("R\0\0\0\010\0\0\0\0", 9));
}

TEST(pgwire_backend, row_description_and_data_rows_round_trip) {
  std::vector<column> cols{{"id", {type_id::bigint}},
                           {"name", {type_id::varchar}},
                           {"ok", {type_id::boolean}}};
  row_batch rows;
  rows.width = 3;
  rows.cells = {"7", "héllo", "true", std::nullopt, "x", "false"};
  std::string out;
  row_description(out, cols, {});
  data_rows(out, cols, {}, rows, 0, 2);
  frame f;
  auto r = next_frame(out, false, 1 << 20, f);
  ASSERT_EQ(r.status, decode_status::ok);
  EXPECT_EQ(f.tag, 'T');
  byte_reader desc{f.body};
  EXPECT_EQ(desc.be_u16(), 3);
  EXPECT_EQ(desc.cstring(), "id");
  desc.be_u32();
  desc.be_u16();
  EXPECT_EQ(desc.be_u32(), 20u); // int8
  auto rest = std::string_view{out}.substr(r.consumed);
  r = next_frame(rest, false, 1 << 20, f);
  ASSERT_EQ(f.tag, 'D');
  byte_reader row{f.body};
  EXPECT_EQ(row.be_u16(), 3);
  EXPECT_EQ(row.be_u32(), 1u);
  EXPECT_EQ(row.bytes(1), "7");
  EXPECT_EQ(row.be_u32(), 6u);
  EXPECT_EQ(row.bytes(6), "héllo");
  EXPECT_EQ(row.be_u32(), 1u);
  EXPECT_EQ(row.bytes(1), "t");
  rest = rest.substr(r.consumed);
  r = next_frame(rest, false, 1 << 20, f);
  byte_reader second{f.body};
  second.be_u16();
  EXPECT_EQ(second.be_i32(), -1); // NULL
}

namespace {

std::string hex_of(const std::string& bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 0xF];
  }
  return out;
}

} // namespace

TEST(pgwire_backend, binary_format_encodes_fixed_width_types) {
  std::string out;
  ASSERT_TRUE(binary_value({type_id::bigint}, "-2", out));
  EXPECT_EQ(out, std::string("\xff\xff\xff\xff\xff\xff\xff\xfe", 8));
  ASSERT_TRUE(binary_value({type_id::integer}, "258", out));
  EXPECT_EQ(out, std::string("\0\0\1\2", 4));
  ASSERT_TRUE(binary_value({type_id::boolean}, "true", out));
  EXPECT_EQ(out, std::string("\1", 1));
  ASSERT_TRUE(binary_value({type_id::double_precision}, "1.5", out));
  EXPECT_EQ(out, std::string("\x3f\xf8\0\0\0\0\0\0", 8));
  EXPECT_FALSE(binary_value({type_id::integer}, "not a number", out));
  EXPECT_FALSE(binary_value({type_id::interval}, "1 day", out));
}

TEST(pgwire_backend, binary_format_encodes_numeric_dates_times_and_uuids) {
  std::string out;
  // 2024-01-01 is day 8766 after 2000-01-01.
  ASSERT_TRUE(binary_value({type_id::date}, "2024-01-01", out));
  EXPECT_EQ(out, std::string("\0\0\x22\x3e", 4));
  ASSERT_TRUE(binary_value({type_id::date}, "1999-12-31", out));
  EXPECT_EQ(out, std::string("\xff\xff\xff\xff", 4));
  // 2000-01-02 00:00:01.5 is 86401.5 s after the epoch.
  ASSERT_TRUE(binary_value({type_id::timestamp, 6}, "2000-01-02 00:00:01.5", out));
  EXPECT_EQ(out, std::string("\0\0\0\x14\x1d\xee\x43\x60", 8)); // 86401500000
  ASSERT_TRUE(binary_value({type_id::time, 6}, "01:00:00", out));
  EXPECT_EQ(out, std::string("\0\0\0\0\xd6\x93\xa4\0", 8)); // 3600000000
  ASSERT_TRUE(binary_value({type_id::uuid}, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", out));
  EXPECT_EQ(hex_of(out), "a0eebc999c0b4ef8bb6d6bb9bd380a11");
  // -12345.6780: 2 digit groups before the point (1, 2345), 6780 after;
  // trailing zero groups dropped, dscale 4 kept.
  ASSERT_TRUE(binary_value({type_id::decimal, 10, 4}, "-12345.6780", out));
  EXPECT_EQ(hex_of(out), "0003" "0001" "4000" "0004" "0001" "0929" "1a7c");
  ASSERT_TRUE(binary_value({type_id::decimal, 10, 2}, "0.00", out));
  EXPECT_EQ(hex_of(out), "0000" "0000" "0000" "0002");
  EXPECT_FALSE(binary_value({type_id::decimal}, "1e5", out));
  EXPECT_FALSE(binary_value({type_id::date}, "yesterday", out));
}

TEST(pgwire_backend, binary_parameters_of_those_types_read_back_as_text) {
  for (auto [oid, text] : std::vector<std::pair<uint32_t, std::string>>{
         {1700, "-12345.6780"}, {1700, "0.0001"}, {1700, "100000000"}, {1700, "NaN"},
         {1082, "2024-02-29"}, {1082, "1969-07-20"},
         {1114, "2024-02-29 13:14:15.25"}, {1184, "1999-12-31 23:59:59"},
         {2950, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"}}) {
    sql_type type = oid == 1700 ? sql_type{type_id::decimal}
                    : oid == 1082 ? sql_type{type_id::date}
                    : oid == 2950 ? sql_type{type_id::uuid}
                                  : sql_type{type_id::timestamp};
    std::string bytes;
    ASSERT_TRUE(binary_value(type, text, bytes)) << text;
    EXPECT_EQ(binary_param_to_text(oid, bytes), text) << oid;
  }
  EXPECT_FALSE(binary_param_to_text(1700, std::string("\0\1", 2)));
  EXPECT_FALSE(binary_param_to_text(1082, std::string("\0\1", 2)));
  EXPECT_FALSE(binary_param_to_text(2950, "short"));
  EXPECT_EQ(binary_param_to_text(1082, std::string("\x7f\xff\xff\xff", 4)), "infinity");
  EXPECT_EQ(binary_param_to_text(1114, std::string("\x80\0\0\0\0\0\0\0", 8)), "-infinity");
  // A day far beyond any calendar still reads without overflow.
  EXPECT_TRUE(binary_param_to_text(1082, std::string("\x2e\x31\0\0", 4)));
}

namespace {

/// An array's binary form: dimensions, element type, then the elements.
std::string binary_array(uint32_t elem, std::vector<std::pair<int32_t, int32_t>> dims,
                         std::vector<std::optional<std::string>> items) {
  std::string out;
  put_be_u32(out, static_cast<uint32_t>(dims.size()));
  put_be_u32(out, 0);
  put_be_u32(out, elem);
  for (auto [size, lower] : dims) {
    put_be_u32(out, static_cast<uint32_t>(size));
    put_be_u32(out, static_cast<uint32_t>(lower));
  }
  for (const auto& item : items) {
    put_be_u32(out, item ? static_cast<uint32_t>(item->size()) : 0xFFFFFFFF);
    if (item)
      out += *item;
  }
  return out;
}

std::string be32(uint32_t v) {
  std::string out;
  put_be_u32(out, v);
  return out;
}

} // namespace

TEST(pgwire_backend, binary_bytea_and_arrays_read_back_as_their_text_forms) {
  // bytea (and node-postgres's Buffers, sent with no type): hex, whatever the bytes.
  EXPECT_EQ(binary_param_to_text(17, std::string("\0\xff\\x41", 5)), "\\x00ff5c7834");
  EXPECT_EQ(binary_param_to_text(0, "A"), "\\x41");
  EXPECT_EQ(binary_param_to_text(25, "plain"), "plain") << "text's binary form is its text";
  EXPECT_EQ(binary_param_to_text(1007, binary_array(23, {{3, 1}}, {be32(1), std::nullopt, be32(-2u)})),
            "{\"1\",NULL,\"-2\"}");
  EXPECT_EQ(binary_param_to_text(1009, binary_array(25, {{2, 1}, {1, 1}}, {"a\"b", "c\\d"})),
            "{{\"a\\\"b\"},{\"c\\\\d\"}}");
  EXPECT_EQ(binary_param_to_text(1007, binary_array(23, {{1, 0}}, {be32(5)})), "[0:0]={\"5\"}");
  EXPECT_EQ(binary_param_to_text(1007, binary_array(23, {}, {})), "{}");
  // Malformed: lengths past the end, more elements claimed than carried, an
  // element type not read, bytes left over.
  EXPECT_FALSE(binary_param_to_text(1007, binary_array(23, {{2, 1}}, {be32(1)})));
  EXPECT_FALSE(binary_param_to_text(1007, binary_array(23, {{1 << 30, 1}}, {be32(1)})));
  EXPECT_FALSE(binary_param_to_text(1007, binary_array(3904, {{1, 1}}, {be32(1)})));
  EXPECT_FALSE(binary_param_to_text(1007, binary_array(23, {{1, 1}}, {be32(1)}) + "x"));
  EXPECT_FALSE(binary_param_to_text(1007, "\xff\xff\xff\xff"));
}

TEST(pgwire_backend, text_values_follow_postgres_spelling) {
  EXPECT_EQ(text_value({type_id::boolean}, "true"), "t");
  EXPECT_EQ(text_value({type_id::boolean}, "false"), "f");
  EXPECT_EQ(text_value({type_id::varbinary}, std::string("\x00\xab", 2)),
            "\\x00ab");
  EXPECT_EQ(text_value({type_id::timestamp, 6}, "2024-02-29 12:00:00.123000"),
            "2024-02-29 12:00:00.123");
  EXPECT_EQ(text_value({type_id::timestamp, 3}, "2024-02-29 12:00:00.000"), "2024-02-29 12:00:00");
  EXPECT_EQ(text_value({type_id::time, 6}, "23:59:59.500000"), "23:59:59.5");
  EXPECT_EQ(text_value({type_id::timestamp_tz, 3}, "2024-02-29 12:00:00.100"),
            "2024-02-29 12:00:00.1+00");
  EXPECT_EQ(text_value({type_id::timestamp, 0}, "2024-02-29 12:00:00"), "2024-02-29 12:00:00");
  EXPECT_EQ(type_oid({type_id::decimal, 10, 2}), 1700u);
  EXPECT_EQ(type_oid({type_id::timestamp_tz, 6}), 1184u);
  EXPECT_EQ(type_oid({type_id::uuid}), 2950u);
}

TEST(pgwire_backend, error_response_carries_sqlstate_and_message) {
  std::string out;
  error_response(out, {"ERROR", "57P03", "the gateway has no configuration yet",
                       ""});
  frame f;
  ASSERT_EQ(next_frame(out, false, 1 << 20, f).status, decode_status::ok);
  EXPECT_EQ(f.tag, 'E');
  auto body = std::string{f.body};
  EXPECT_NE(body.find(std::string("C57P03\0", 7)), std::string::npos);
  EXPECT_NE(body.find("Mthe gateway has no configuration yet"),
            std::string::npos);
  EXPECT_EQ(body.back(), '\0');
}

TEST(temporal, timestamptz_text_in_any_zone_reads_as_utc) {
  EXPECT_EQ(qf::utc_timestamp_text("2024-02-29 21:00:00.5+09"), "2024-02-29 12:00:00.5");
  EXPECT_EQ(qf::utc_timestamp_text("2024-03-01 00:10:00-03:30"), "2024-03-01 03:40:00");
  EXPECT_EQ(qf::utc_timestamp_text("2024-01-01 01:00:00+05:30:15"), "2023-12-31 19:29:45");
  EXPECT_EQ(qf::utc_timestamp_text("2024-02-29 12:00:00+00"), "2024-02-29 12:00:00");
  for (auto same : {"infinity", "-infinity", "2024-02-29 12:00:00", "0044-03-15 12:00:00+00 BC", "2024-02-29"})
    EXPECT_EQ(qf::utc_timestamp_text(same), same);
}
