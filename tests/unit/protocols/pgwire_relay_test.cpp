// Reading a server's answer for relay: whole messages only, DataRows
// counted, the first error read and its position dropped, ReadyForQuery
// ending the answer, COPY and malformed lengths refused.
#include "protocols/pgwire/relay.hpp"

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

TEST(pgwire_relay, an_error_is_read_and_relayed_without_its_position) {
  std::string fields("SERROR\0C42P01\0Mno such table\0P15\0RparserOpenTable\0\0", 51);
  auto r = relay_messages(message('E', fields) + z());
  ASSERT_TRUE(r.error_code);
  EXPECT_EQ(*r.error_code, "42P01");
  EXPECT_EQ(r.error_message, "no such table");
  std::string kept("SERROR\0C42P01\0Mno such table\0RparserOpenTable\0\0", 47);
  EXPECT_EQ(r.messages, message('E', kept));
}

TEST(pgwire_relay, copy_and_malformed_lengths_are_faults) {
  EXPECT_NE(relay_messages(message('H', std::string(3, '\0'))).fault, nullptr);
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

TEST(pgwire_relay, a_fatal_error_is_relayed_as_an_error) {
  std::string fields("SFATAL\0VFATAL\0C57P01\0Mterminating connection\0\0", 46);
  auto r = relay_messages(message('E', fields));
  ASSERT_TRUE(r.error_code);
  EXPECT_EQ(*r.error_code, "57P01");
  std::string kept("SERROR\0VERROR\0C57P01\0Mterminating connection\0\0", 46);
  EXPECT_EQ(r.messages, message('E', kept));
}
