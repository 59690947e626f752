// The PostgreSQL session state machine driven byte by byte, as a client
// would, with the driver's part played by the test. Also the SQL splitter.
#include "protocols/common/byte_reader.hpp"
#include "protocols/pgwire/frontend.hpp"
#include "protocols/pgwire/session.hpp"
#include "protocols/sql/statements.hpp"

#include <gtest/gtest.h>

using namespace qf;
using namespace qf::pgwire;
using namespace qf::byte_writer;

namespace {

std::string startup_bytes(const std::string& user) {
  std::string body;
  put_be_u32(body, protocol_v3);
  put_cstring(body, "user");
  put_cstring(body, user);
  put_cstring(body, "database");
  put_cstring(body, "db");
  body += '\0';
  std::string out;
  put_be_u32(out, static_cast<uint32_t>(body.size() + 4));
  return out + body;
}

std::string query_message(const std::string& sql) {
  std::string out(1, 'Q');
  put_be_u32(out, static_cast<uint32_t>(sql.size() + 5));
  put_cstring(out, sql);
  return out;
}

/// The tags of the messages in out, e.g. "RSSSK Z".
std::string tags(const std::string& out) {
  std::string result;
  std::string_view rest = out;
  while (!rest.empty()) {
    frame f;
    auto r = next_frame(rest, false, 1 << 24, f);
    if (r.status != decode_status::ok)
      return result + "?";
    result += f.tag;
    rest.remove_prefix(r.consumed);
  }
  return result;
}

/// The CommandComplete tags in out.
std::vector<std::string> completions(const std::string& out) {
  std::vector<std::string> result;
  std::string_view rest = out;
  while (!rest.empty()) {
    frame f;
    auto r = next_frame(rest, false, 1 << 24, f);
    if (r.status != decode_status::ok)
      break;
    if (f.tag == 'C')
      result.emplace_back(f.body.substr(0, f.body.size() - 1));
    rest.remove_prefix(r.consumed);
  }
  return result;
}

server_session started() {
  server_session s{{"15.0 (QueryFlux)", 1 << 20, 42, 7}};
  s.feed(startup_bytes("alice"));
  auto ev = s.next_event();
  EXPECT_TRUE(ev && std::holds_alternative<startup_event>(*ev));
  s.accept();
  s.take_output();
  return s;
}

row_batch one_row(std::string value) {
  row_batch b;
  b.width = 1;
  b.cells.emplace_back(std::move(value));
  return b;
}

} // namespace

TEST(pgwire_session, startup_sends_auth_ok_parameters_key_and_ready) {
  server_session s{{"15.0 (QueryFlux)", 1 << 20, 42, 7}};
  auto bytes = startup_bytes("alice");
  // Byte by byte: nothing happens until the packet is whole.
  for (size_t i = 0; i + 1 < bytes.size(); ++i) {
    s.feed(bytes.substr(i, 1));
    EXPECT_FALSE(s.next_event());
  }
  s.feed(bytes.substr(bytes.size() - 1));
  auto ev = s.next_event();
  ASSERT_TRUE(ev);
  EXPECT_EQ(std::get<startup_event>(*ev).params.at("user"), "alice");
  s.accept();
  auto out = s.take_output();
  EXPECT_EQ(tags(out), "RSSSSSSSSKZ");
  EXPECT_NE(out.find(std::string("server_version\0", 15)), std::string::npos);
  EXPECT_NE(out.find(std::string("integer_datetimes\0on\0", 21)),
            std::string::npos);
}

TEST(pgwire_session, ssl_request_is_declined_and_startup_goes_on) {
  server_session s{{}};
  std::string ssl;
  put_be_u32(ssl, 8);
  put_be_u32(ssl, ssl_request_code);
  s.feed(ssl);
  EXPECT_EQ(s.take_output(), "N");
  s.feed(startup_bytes("bob"));
  EXPECT_TRUE(s.next_event());
}

TEST(pgwire_session, rejected_startup_is_fatal_and_closes) {
  server_session s{{}};
  s.feed(startup_bytes("bob"));
  s.next_event();
  s.reject({"ERROR", "57P03", "the gateway has no configuration yet", ""});
  auto out = s.take_output();
  EXPECT_EQ(tags(out), "E");
  EXPECT_NE(out.find("SFATAL"), std::string::npos);
  EXPECT_NE(out.find("C57P03"), std::string::npos);
  EXPECT_TRUE(s.closing());
}

TEST(pgwire_session, cancel_request_becomes_an_event_and_closes) {
  server_session s{{}};
  std::string cancel;
  put_be_u32(cancel, 16);
  put_be_u32(cancel, cancel_request_code);
  put_be_u32(cancel, 42);
  put_be_u32(cancel, 7);
  s.feed(cancel);
  auto ev = s.next_event();
  ASSERT_TRUE(ev);
  EXPECT_EQ(std::get<cancel_event>(*ev).process_id, 42);
  EXPECT_EQ(std::get<cancel_event>(*ev).secret_key, 7);
  EXPECT_TRUE(s.closing());
}

TEST(pgwire_session, simple_query_with_rows) {
  auto s = started();
  s.feed(query_message("SELECT 1 AS x"));
  auto ev = s.next_event();
  ASSERT_TRUE(ev);
  EXPECT_EQ(std::get<run_event>(*ev).sql, "SELECT 1 AS x");
  s.columns({{"x", {type_id::integer}}});
  s.rows(one_row("1"));
  s.complete(-1);
  auto out = s.take_output();
  EXPECT_EQ(tags(out), "TDCZ");
  EXPECT_EQ(completions(out), std::vector<std::string>{"SELECT 1"});
}

TEST(pgwire_session, several_statements_each_get_their_result) {
  auto s = started();
  s.feed(query_message("CREATE TABLE t(x int); INSERT INTO t VALUES (1);"
                       " SELECT 'a;b' AS s"));
  EXPECT_EQ(std::get<run_event>(*s.next_event()).sql, "CREATE TABLE t(x int)");
  s.columns({});
  s.complete(0);
  EXPECT_EQ(std::get<run_event>(*s.next_event()).sql,
            " INSERT INTO t VALUES (1)");
  s.columns({{"Count", {type_id::bigint}}}); // DuckDB's DML answer
  s.rows(one_row("1"));
  s.complete(-1);
  EXPECT_EQ(std::get<run_event>(*s.next_event()).sql, " SELECT 'a;b' AS s");
  s.columns({{"s", {type_id::varchar}}});
  s.rows(one_row("a;b"));
  s.complete(-1);
  auto out = s.take_output();
  EXPECT_EQ(completions(out), (std::vector<std::string>{
                                "CREATE TABLE", "INSERT 0 1", "SELECT 1"}));
  EXPECT_EQ(tags(out), "CCTDCZ");
}

TEST(pgwire_session, an_error_ends_the_query_and_skips_the_rest) {
  auto s = started();
  s.feed(query_message("SELECT 1; SELECT nope; SELECT 3"));
  s.next_event();
  s.columns({{"x", {type_id::integer}}});
  s.rows(one_row("1"));
  s.complete(-1);
  s.next_event();
  s.fail({"ERROR", "42703", "column \"nope\" does not exist", ""});
  EXPECT_FALSE(s.next_event()); // SELECT 3 never runs
  EXPECT_EQ(tags(s.take_output()), "TDCEZ");
}

TEST(pgwire_session, empty_query_gets_empty_query_response) {
  auto s = started();
  s.feed(query_message("  ; -- nothing\n"));
  EXPECT_FALSE(s.next_event());
  EXPECT_EQ(tags(s.take_output()), "IZ");
}

TEST(pgwire_session, transactions_and_session_settings_are_local) {
  auto s = started();
  s.feed(query_message("BEGIN"));
  EXPECT_FALSE(s.next_event());
  auto out = s.take_output();
  EXPECT_EQ(completions(out), std::vector<std::string>{"BEGIN"});
  EXPECT_EQ(out.back(), 'T'); // ReadyForQuery: in a transaction
  s.feed(query_message("SELECT broken"));
  s.next_event();
  s.fail({"ERROR", "42601", "syntax error", ""});
  EXPECT_EQ(s.take_output().back(), 'E'); // failed transaction
  s.feed(query_message("SELECT 1"));
  EXPECT_FALSE(s.next_event()); // refused without reaching an engine
  out = s.take_output();
  EXPECT_NE(out.find("C25P02"), std::string::npos);
  s.feed(query_message("ROLLBACK"));
  out = s.take_output();
  EXPECT_EQ(completions(out), std::vector<std::string>{"ROLLBACK"});
  EXPECT_EQ(out.back(), 'I');

  s.feed(query_message("SET application_name = 'report'; SHOW application_name"));
  EXPECT_FALSE(s.next_event());
  out = s.take_output();
  EXPECT_EQ(tags(out), "CTDCSZ"); // SET, SHOW's row, ParameterStatus
  EXPECT_NE(out.find("report"), std::string::npos);
}

TEST(pgwire_session, pipelined_queries_are_answered_in_order) {
  auto s = started();
  s.feed(query_message("SELECT 1") + query_message("SELECT 2"));
  EXPECT_EQ(std::get<run_event>(*s.next_event()).sql, "SELECT 1");
  EXPECT_FALSE(s.next_event()); // the second waits for the first
  s.columns({{"x", {type_id::integer}}});
  s.complete(-1);
  EXPECT_EQ(std::get<run_event>(*s.next_event()).sql, "SELECT 2");
}

TEST(pgwire_session, extended_protocol_is_refused_until_sync) {
  auto s = started();
  std::string parse_msg(1, 'P');
  std::string body;
  put_cstring(body, "");
  put_cstring(body, "SELECT 1");
  put_be_u16(body, 0);
  put_be_u32(parse_msg, static_cast<uint32_t>(body.size() + 4));
  parse_msg += body;
  std::string sync_msg(1, 'S');
  put_be_u32(sync_msg, 4);
  s.feed(parse_msg + parse_msg + sync_msg);
  auto out = s.take_output();
  EXPECT_EQ(tags(out), "EZ");
  EXPECT_NE(out.find("C0A000"), std::string::npos);
}

TEST(pgwire_session, garbage_is_a_fatal_protocol_violation) {
  auto s = started();
  s.feed(std::string("\x01\x00\x00\x00\x02", 5));
  EXPECT_TRUE(s.closing());
  auto out = s.take_output();
  EXPECT_NE(out.find("C08P01"), std::string::npos);
}

TEST(sql_statements, split_respects_quotes_comments_and_dollars) {
  auto parts = sql::split_statements(
    "SELECT 'a;b'; SELECT \"x;y\" FROM t -- c;\n; /* ; */ SELECT $$;$$;"
    "SELECT $tag$ ; $tag$ ;;  ");
  ASSERT_EQ(parts.size(), 4u);
  EXPECT_EQ(parts[0], "SELECT 'a;b'");
  EXPECT_EQ(parts[1], " SELECT \"x;y\" FROM t -- c;\n");
  EXPECT_EQ(parts[2], " /* ; */ SELECT $$;$$");
  EXPECT_EQ(parts[3], "SELECT $tag$ ; $tag$ ");
  EXPECT_TRUE(sql::split_statements("  -- only a comment").empty());
  EXPECT_EQ(sql::split_statements("SELECT 'unterminated;").size(), 1u);
}

TEST(sql_statements, leading_keywords) {
  EXPECT_EQ(sql::leading_keyword("  /* hi */ select 1"), "SELECT");
  EXPECT_EQ(sql::leading_keyword("((SELECT 1))"), "SELECT");
  EXPECT_EQ(sql::leading_keywords("create table t (x int)", 2),
            "CREATE TABLE");
  EXPECT_EQ(sql::leading_keyword(""), "");
}
