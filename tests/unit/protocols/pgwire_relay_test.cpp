// Reading a server's answer for relay: whole messages only, DataRows
// counted, the first error read and its position moved, ReadyForQuery
// ending the answer, COPY TO STDOUT relayed, COPY FROM STDIN and
// replication told apart, malformed lengths refused; and the requests a
// relayed Execute and a refused COPY send.
#include "protocols/pgwire/relay.hpp"

#include "protocols/pgwire/frontend.hpp"

#include <gtest/gtest.h>

using qf::pgwire::relay_messages;

namespace {

std::string message(char type, const std::string& body) {
  std::string out(1, type);
  auto n = static_cast<uint32_t>(body.size() + 4);
  for (int shift = 24; shift >= 0; shift -= 8)
    out += static_cast<char>((n >> shift) & 0xFF);
  return out + body;
}

std::string z(char status = 'I') {
  return message('Z', std::string(1, status));
}

/// Frontend messages, read back with the frontend's own decoder; none if
/// one does not parse.
std::vector<qf::pgwire::message> as_the_server_reads(std::string_view rest) {
  std::vector<qf::pgwire::message> got;
  while (!rest.empty()) {
    qf::pgwire::frame f;
    auto d = qf::pgwire::next_frame(rest, false, 1 << 20, f);
    auto m = d.status == qf::pgwire::decode_status::ok ? qf::pgwire::parse_message(f) : std::nullopt;
    if (!m)
      return {};
    got.push_back(*m);
    rest.remove_prefix(d.consumed);
  }
  return got;
}

const std::string row = message('D', std::string("\0\1\0\0\0\1" "1", 7));
const std::string done = message('C', std::string("SELECT 1\0", 9));

} // namespace

TEST(pgwire_relay, whole_messages_pass_and_ready_for_query_ends_the_answer) {
  auto in = row + row + done + z();
  auto r = relay_messages(in);
  EXPECT_EQ(r.messages, row + row + done);
  EXPECT_EQ(r.data_rows, 2);
  EXPECT_EQ(r.consumed, in.size());
  ASSERT_TRUE(r.ready);
  EXPECT_EQ(*r.ready, 'I');
  EXPECT_FALSE(r.trailing);
  EXPECT_FALSE(r.error_code);
}

TEST(pgwire_relay, a_partial_message_waits_and_says_how_much_it_needs) {
  auto in = row + done.substr(0, 7);
  auto r = relay_messages(in);
  EXPECT_EQ(r.messages, row);
  EXPECT_EQ(r.consumed, row.size());
  EXPECT_EQ(r.need, done.size());
  EXPECT_FALSE(r.ready);
  // Four bytes of a header are not yet a message either.
  EXPECT_EQ(relay_messages(row.substr(0, 4)).consumed, 0u);
}

TEST(pgwire_relay, an_error_is_read_and_relayed_with_its_position_in_the_clients_text) {
  std::string fields("SERROR\0C42P01\0Mno such table\0P15\0RparserOpenTable\0\0", 51);
  auto r = relay_messages(message('E', fields) + z());
  ASSERT_TRUE(r.error_code);
  EXPECT_EQ(*r.error_code, "42P01");
  EXPECT_EQ(r.error_message, "no such table");
  EXPECT_EQ(r.messages, message('E', fields)) << "a statement the client sent whole";
  // The third statement of a Query, 21 characters into it.
  qf::pgwire::relayed shifted;
  qf::pgwire::relay_messages(message('E', fields) + z(), shifted, qf::pgwire::default_max_message,
                             qf::pgwire::server_errors::relayed, 21);
  std::string moved("SERROR\0C42P01\0Mno such table\0P36\0RparserOpenTable\0\0", 51);
  EXPECT_EQ(shifted.messages, message('E', moved));
}

TEST(pgwire_relay, copy_to_stdout_passes_with_its_lines_counted) {
  const std::string out_response = message('H', std::string("\0\0\1\0\0", 5));
  const std::string line = message('d', "1\n");
  const std::string copy_done = message('c', "");
  const std::string tag = message('C', std::string("COPY 2\0", 7));
  auto in = out_response + line + line + copy_done + tag + z();
  auto r = relay_messages(in);
  EXPECT_EQ(r.fault, nullptr);
  EXPECT_EQ(r.messages, out_response + line + line + copy_done + tag);
  EXPECT_EQ(r.data_rows, 2);
  EXPECT_EQ(r.consumed, in.size());
  EXPECT_TRUE(r.ready);
}

TEST(pgwire_relay, copy_from_stdin_stops_the_reading_at_the_servers_request) {
  const std::string notice = message('N', std::string("SNOTICE\0Mhi\0\0", 13));
  const std::string in_response = message('G', std::string("\0\0\1\0\0", 5));
  auto in = notice + in_response; // copy_in_response views it
  auto r = relay_messages(in);
  EXPECT_TRUE(r.copy_in);
  EXPECT_EQ(r.fault, nullptr);
  EXPECT_EQ(r.messages, notice);
  EXPECT_EQ(r.copy_in_response, in_response);
  EXPECT_EQ(r.consumed, notice.size() + in_response.size());
  EXPECT_FALSE(r.ready);
}

TEST(pgwire_relay, dropped_errors_are_read_but_not_relayed) {
  qf::pgwire::relayed r;
  auto failed = message('E', std::string("SERROR\0C57014\0McopyFail\0\0", 25)) + z();
  relay_messages(failed, r, qf::pgwire::default_max_message, qf::pgwire::server_errors::dropped);
  ASSERT_TRUE(r.error_code);
  EXPECT_EQ(*r.error_code, "57014");
  EXPECT_TRUE(r.messages.empty());
  EXPECT_TRUE(r.ready);
}

TEST(pgwire_relay, a_copy_is_refused_with_copy_fail_and_after_a_batch_a_sync) {
  std::string out;
  qf::pgwire::copy_fail_message(out, "no", false);
  EXPECT_EQ(out, message('f', std::string("no\0", 3)));
  out.clear();
  qf::pgwire::copy_fail_message(out, "no", true);
  EXPECT_EQ(out, message('f', std::string("no\0", 3)) + message('S', ""));
}

TEST(pgwire_relay, replication_and_malformed_lengths_are_faults) {
  EXPECT_NE(relay_messages(message('W', std::string(3, '\0'))).fault, nullptr);
  EXPECT_NE(relay_messages(std::string("D\0\0\0\1", 5)).fault, nullptr);
  auto big = relay_messages(row, 4); // longer than the largest allowed
  EXPECT_NE(big.fault, nullptr);
  EXPECT_EQ(big.consumed, 0u);
  EXPECT_TRUE(big.messages.empty());
}

TEST(pgwire_relay, bytes_after_ready_for_query_are_noticed) {
  auto r = relay_messages(done + z('T') + message('A', "x"));
  ASSERT_TRUE(r.ready);
  EXPECT_EQ(*r.ready, 'T');
  EXPECT_TRUE(r.trailing);
  EXPECT_EQ(r.consumed, done.size() + 6);
}

TEST(pgwire_relay, a_notification_is_not_relayed_but_noticed) {
  auto in = message('A', std::string("\0\0\0\7chan\0hi\0", 12)) + row + done + z();
  auto r = relay_messages(in);
  EXPECT_TRUE(r.notified);
  EXPECT_EQ(r.messages, row + done);
  EXPECT_EQ(r.consumed, in.size());
}

TEST(pgwire_relay, a_parameter_status_is_relayed_and_noticed) {
  auto status = message('S', std::string("TimeZone\0Asia/Tokyo\0", 20));
  auto r = relay_messages(row + status + done + z());
  EXPECT_TRUE(r.setting_changed);
  EXPECT_EQ(r.messages, row + status + done);
  EXPECT_FALSE(relay_messages(row + done + z()).setting_changed);
}

TEST(pgwire_relay, a_fatal_error_is_relayed_as_an_error) {
  std::string fields("SFATAL\0VFATAL\0C57P01\0Mterminating connection\0\0", 46);
  auto r = relay_messages(message('E', fields));
  ASSERT_TRUE(r.error_code);
  EXPECT_EQ(*r.error_code, "57P01");
  std::string kept("SERROR\0VERROR\0C57P01\0Mterminating connection\0\0", 46);
  EXPECT_EQ(r.messages, message('E', kept));
}

TEST(pgwire_relay, parse_bind_and_close_complete_are_dropped_the_rest_of_an_execute_passes) {
  // The session answered Parse and Bind itself; the server's answer to our
  // own Close, Parse and Bind must not reach the client.
  const std::string description = message('T', std::string("\0\0", 2));
  auto in = message('3', "") + message('1', "") + message('2', "") + description + row
            + done + z();
  auto r = relay_messages(in);
  EXPECT_TRUE(r.parse_complete);
  EXPECT_EQ(r.messages, description + row + done);
  EXPECT_EQ(r.data_rows, 1);
  EXPECT_EQ(r.consumed, in.size());
  ASSERT_TRUE(r.ready);
}

TEST(pgwire_relay, a_result_reused_for_the_next_answer_starts_afresh) {
  qf::pgwire::relayed r;
  auto failed = message('E', std::string("SERROR\0C42P01\0Mno table\0\0", 26)) + z();
  relay_messages(failed, r);
  ASSERT_TRUE(r.error_code);
  relay_messages(row + done + z(), r);
  EXPECT_FALSE(r.error_code);
  EXPECT_TRUE(r.error_message.empty());
  EXPECT_EQ(r.messages, row + done);
  EXPECT_EQ(r.data_rows, 1);
}

TEST(pgwire_relay, an_execute_goes_out_as_parse_bind_describe_execute_sync) {
  // Read back with the frontend's own decoder, as the server reads it.
  std::string out;
  qf::pgwire::extended_messages(out, "SELECT $1, $2", {std::string("a\0b", 3), std::nullopt},
                                {25}, {1}, true);
  auto got = as_the_server_reads(out);
  ASSERT_EQ(got.size(), 5u);
  auto& p = std::get<qf::pgwire::parse>(got[0]);
  EXPECT_EQ(p.statement, "");
  EXPECT_EQ(p.sql, "SELECT $1, $2");
  EXPECT_EQ(p.param_types, std::vector<uint32_t>{25}) << "as the client declared: $2 inferred";
  auto& b = std::get<qf::pgwire::bind>(got[1]);
  EXPECT_EQ(b.portal, "");
  EXPECT_TRUE(b.param_formats.empty()); // all text
  ASSERT_EQ(b.params.size(), 2u);
  EXPECT_EQ(b.params[0], std::string("a\0b", 3));
  EXPECT_FALSE(b.params[1]); // NULL
  EXPECT_EQ(b.result_formats, std::vector<int16_t>{1});
  auto& d = std::get<qf::pgwire::describe>(got[2]);
  EXPECT_EQ(d.kind, 'P');
  EXPECT_EQ(std::get<qf::pgwire::execute>(got[3]).max_rows, 0);
  EXPECT_TRUE(std::holds_alternative<qf::pgwire::sync>(got[4]));

  std::string without;
  qf::pgwire::extended_messages(without, "SELECT 1", {}, {}, {}, false);
  EXPECT_EQ(without.find("D\0\0\0\6P", 0, 7), std::string::npos); // no Describe
}

TEST(pgwire_relay, a_statement_is_described_by_the_server_without_running) {
  std::string out;
  qf::pgwire::describe_statement_messages(out, "INSERT INTO t VALUES ($1) RETURNING id", {0});
  auto got = as_the_server_reads(out);
  ASSERT_EQ(got.size(), 3u) << "Parse, Describe, Sync: no Bind, no Execute";
  EXPECT_EQ(std::get<qf::pgwire::parse>(got[0]).param_types, std::vector<uint32_t>{0});
  auto& d = std::get<qf::pgwire::describe>(got[1]);
  EXPECT_EQ(d.kind, 'S');
  EXPECT_EQ(d.name, "");
  EXPECT_TRUE(std::holds_alternative<qf::pgwire::sync>(got[2]));

  // The answer's ParameterDescription, among the others.
  auto answer = message('t', std::string("\0\2\0\0\0\x17\0\0\0\x19", 10))
                + message('T', std::string("\0\0", 2));
  EXPECT_EQ(qf::pgwire::parameter_types_of(answer), (std::vector<uint32_t>{23, 25}));
  EXPECT_EQ(qf::pgwire::parameter_types_of(message('n', "")), std::nullopt);
  // One that claims more types than it holds is not read.
  EXPECT_EQ(qf::pgwire::parameter_types_of(message('t', std::string("\0\3\0\0\0\x17", 6))),
            std::nullopt);
  EXPECT_EQ(qf::pgwire::parameter_types_of(std::string("t\0\0\0\xff\0", 6)), std::nullopt);
}
