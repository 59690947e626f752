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

session_options test_options() {
  session_options opts;
  opts.max_message = 1 << 20;
  opts.process_id = 42;
  opts.secret_key = 7;
  return opts;
}

server_session started(session_options opts = test_options()) {
  server_session s{std::move(opts)};
  s.feed(startup_bytes("alice"));
  auto ev = s.next_event();
  EXPECT_TRUE(ev && std::holds_alternative<startup_event>(*ev));
  s.accept();
  s.take_output();
  return s;
}

/// The client's BEGIN, run: a block is open.
void open_block(server_session& s) {
  s.feed(query_message("BEGIN"));
  ASSERT_TRUE(s.next_event());
  s.complete(-1);
  s.take_output();
}

row_batch one_row(std::string value) {
  row_batch b;
  b.width = 1;
  b.cells.emplace_back(std::move(value));
  return b;
}

} // namespace

TEST(pgwire_session, startup_sends_auth_ok_parameters_key_and_ready) {
  server_session s{test_options()};
  auto bytes = startup_bytes("alice");
  // Byte by byte: nothing happens until the packet is whole.
  for (size_t i = 0; i + 1 < bytes.size(); ++i) {
    s.feed(bytes.substr(i, 1));
    EXPECT_FALSE(s.next_event());
  }
  s.feed(bytes.substr(bytes.size() - 1));
  auto ev = s.next_event();
  ASSERT_TRUE(ev);
  EXPECT_TRUE(std::holds_alternative<startup_event>(*ev));
  EXPECT_EQ(s.startup_params().at("user"), "alice");
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

TEST(pgwire_session, ssl_request_with_tls_waits_for_the_handshake) {
  session_options opts;
  opts.tls_available = true;
  server_session s{opts};
  std::string ssl;
  put_be_u32(ssl, 8);
  put_be_u32(ssl, ssl_request_code);
  s.feed(ssl);
  EXPECT_EQ(s.take_output(), "S");
  auto ev = s.next_event();
  ASSERT_TRUE(ev);
  EXPECT_TRUE(std::holds_alternative<tls_event>(*ev));
  s.tls_started();
  s.feed(startup_bytes("bob"));
  EXPECT_TRUE(std::holds_alternative<startup_event>(*s.next_event()));
}

TEST(pgwire_session, cleartext_after_an_ssl_request_is_refused) {
  session_options opts;
  opts.tls_available = true;
  server_session s{opts};
  std::string ssl;
  put_be_u32(ssl, 8);
  put_be_u32(ssl, ssl_request_code);
  s.feed(ssl + startup_bytes("mallory"));
  EXPECT_TRUE(s.closing());
  EXPECT_NE(s.take_output().find("C08P01"), std::string::npos);
}

TEST(pgwire_session, password_is_asked_for_and_checked_by_the_driver) {
  server_session s{{}};
  s.feed(startup_bytes("alice"));
  s.next_event();
  s.request_password();
  EXPECT_EQ(s.take_output(), std::string("R\0\0\0\x08\0\0\0\x03", 9));
  std::string pw(1, 'p');
  put_be_u32(pw, 4 + 7);
  put_cstring(pw, "s3cret");
  s.feed(pw);
  auto ev = s.next_event();
  ASSERT_TRUE(ev);
  EXPECT_EQ(std::get<password_event>(*ev).password, "s3cret");
  s.accept();
  EXPECT_EQ(tags(s.take_output()), "RSSSSSSSSKZ");
}

TEST(pgwire_session, a_query_instead_of_a_password_is_a_violation) {
  server_session s{{}};
  s.feed(startup_bytes("alice"));
  s.next_event();
  s.request_password();
  s.take_output();
  s.feed(query_message("SELECT 1"));
  EXPECT_TRUE(s.closing());
  EXPECT_NE(s.take_output().find("C08P01"), std::string::npos);
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

namespace {

server_session started_with_scripts_in_one_transaction() {
  auto opts = test_options();
  opts.scripts_in_one_transaction = [](std::string_view) { return true; };
  opts.settings_on_server = [](std::string_view) { return true; }; // both: the engine is PostgreSQL
  return started(std::move(opts));
}

/// The next event's SQL and its step; the driver answers without rows.
std::pair<std::string, transaction_step> run_next(server_session& s) {
  auto ev = s.next_event();
  if (!ev)
    return {"(none)", transaction_step::none};
  auto run = std::get<run_event>(*ev);
  return {run.sql, run.step};
}

} // namespace

TEST(pgwire_session, a_script_runs_in_an_implicit_transaction_whose_begin_and_commit_are_unseen) {
  auto s = started_with_scripts_in_one_transaction();
  s.feed(query_message("INSERT INTO t VALUES (1); SELECT 2"));
  EXPECT_EQ(run_next(s), (std::pair<std::string, transaction_step>{"BEGIN", transaction_step::begin}));
  s.columns({});
  s.notice({"WARNING", "25001", "ours", ""});
  s.complete(0);
  EXPECT_EQ(run_next(s), (std::pair<std::string, transaction_step>{"INSERT INTO t VALUES (1)",
                                                                  transaction_step::inside}));
  EXPECT_TRUE(s.relayable()) << "the client's own statements are relayed as ever";
  s.columns({});
  s.complete(1);
  EXPECT_EQ(run_next(s).second, transaction_step::inside);
  s.columns({{"x", {type_id::integer}}});
  s.rows(one_row("2"));
  s.complete(-1);
  EXPECT_EQ(run_next(s), (std::pair<std::string, transaction_step>{"COMMIT", transaction_step::end}));
  EXPECT_FALSE(s.relayable()) << "our COMMIT's answer is not the client's";
  s.columns({});
  s.complete(0);
  auto out = s.take_output();
  EXPECT_EQ(completions(out), (std::vector<std::string>{"INSERT 0 1", "SELECT 1"}));
  EXPECT_EQ(tags(out), "CTDCZ") << "no notice, no tag of ours";
  EXPECT_EQ(out.back(), 'I');
}

TEST(pgwire_session, a_failing_statement_rolls_the_implicit_transaction_back) {
  auto s = started_with_scripts_in_one_transaction();
  s.feed(query_message("INSERT INTO t VALUES (1); SELECT 1/0; INSERT INTO t VALUES (2)"));
  run_next(s);
  s.complete(0);
  run_next(s);
  s.complete(1);
  run_next(s);
  s.fail({"ERROR", "22012", "division by zero", ""});
  EXPECT_EQ(run_next(s), (std::pair<std::string, transaction_step>{"ROLLBACK", transaction_step::end}));
  s.complete(0);
  EXPECT_EQ(run_next(s).first, "(none)") << "the rest never runs";
  auto out = s.take_output();
  EXPECT_EQ(tags(out), "CEZ");
  EXPECT_EQ(out.back(), 'I');
}

TEST(pgwire_session, a_scripts_begin_makes_the_block_the_clients_and_its_commit_ends_ours) {
  auto s = started_with_scripts_in_one_transaction();
  s.feed(query_message("INSERT INTO t VALUES (1); BEGIN; INSERT INTO t VALUES (2)"));
  run_next(s); // ours
  s.complete(0);
  run_next(s);
  s.complete(1);
  EXPECT_EQ(run_next(s).first, " INSERT INTO t VALUES (2)") << "BEGIN is answered here";
  s.complete(1);
  EXPECT_EQ(run_next(s).first, "(none)") << "no COMMIT of ours: the block is the client's";
  auto out = s.take_output();
  EXPECT_EQ(completions(out), (std::vector<std::string>{"INSERT 0 1", "BEGIN", "INSERT 0 1"}));
  EXPECT_EQ(out.back(), 'T');

  s.feed(query_message("COMMIT; INSERT INTO t VALUES (3); COMMIT; SELECT 4; SELECT 5"));
  EXPECT_EQ(run_next(s).first, "COMMIT");
  s.complete(0);
  EXPECT_EQ(run_next(s).first, "BEGIN") << "two statements follow: a block of ours";
  s.complete(0);
  run_next(s);
  s.complete(1);
  EXPECT_EQ(run_next(s), (std::pair<std::string, transaction_step>{" COMMIT", transaction_step::end}));
  s.complete(0);
  EXPECT_EQ(run_next(s).first, "BEGIN");
  s.complete(0);
  run_next(s);
  s.columns({{"x", {type_id::integer}}});
  s.complete(-1);
  run_next(s);
  s.columns({{"x", {type_id::integer}}});
  s.complete(-1);
  EXPECT_EQ(run_next(s).first, "COMMIT");
  s.complete(0);
  out = s.take_output();
  EXPECT_EQ(completions(out), (std::vector<std::string>{"COMMIT", "INSERT 0 1", "COMMIT", "SELECT 0", "SELECT 0"}));
  EXPECT_EQ(tags(out), "CCNCTCTCZ") << "PostgreSQL's warning for the COMMIT that ended our block";
}

TEST(pgwire_session, a_script_that_sets_or_one_the_driver_keeps_apart_runs_statement_by_statement) {
  auto s = started_with_scripts_in_one_transaction();
  s.feed(query_message("SET search_path TO a; SELECT 1"));
  EXPECT_NE(run_next(s).first, "BEGIN");
  auto local = started_with_scripts_in_one_transaction();
  local.feed(query_message("SET LOCAL work_mem = '7MB'; SELECT 1"));
  EXPECT_EQ(run_next(local).first, "BEGIN") << "SET LOCAL is the block's: it needs one";
  auto plain = started();
  plain.feed(query_message("SELECT 1; SELECT 2"));
  EXPECT_EQ(run_next(plain).first, "SELECT 1");
}

TEST(pgwire_session, a_savepoint_needs_the_clients_own_block) {
  auto s = started_with_scripts_in_one_transaction();
  s.feed(query_message("INSERT INTO t VALUES (1); SAVEPOINT p; SELECT 2"));
  run_next(s);
  s.complete(0);
  run_next(s);
  s.complete(1);
  EXPECT_EQ(run_next(s).first, "ROLLBACK");
  s.complete(0);
  auto out = s.take_output();
  EXPECT_EQ(tags(out), "CEZ");
  EXPECT_NE(out.find("SAVEPOINT can only be used in transaction blocks"), std::string::npos);
}

TEST(pgwire_session, empty_query_gets_empty_query_response) {
  auto s = started();
  s.feed(query_message("  ; -- nothing\n"));
  EXPECT_FALSE(s.next_event());
  EXPECT_EQ(tags(s.take_output()), "IZ");
}

TEST(pgwire_session, transaction_blocks_pin_and_report_their_status) {
  auto s = started();
  s.feed(query_message("BEGIN; SELECT 1; COMMIT"));
  auto begin = std::get<run_event>(*s.next_event());
  EXPECT_EQ(begin.step, transaction_step::begin);
  s.columns({});
  s.complete(-1);
  auto inside = std::get<run_event>(*s.next_event());
  EXPECT_EQ(inside.step, transaction_step::inside);
  s.columns({{"x", {type_id::integer}}});
  s.rows(one_row("1"));
  s.complete(-1);
  auto end = std::get<run_event>(*s.next_event());
  EXPECT_EQ(end.step, transaction_step::end);
  s.columns({});
  s.complete(-1);
  auto out = s.take_output();
  EXPECT_EQ(completions(out),
            (std::vector<std::string>{"BEGIN", "SELECT 1", "COMMIT"}));
  EXPECT_EQ(out.back(), 'I');

  s.feed(query_message("BEGIN"));
  s.next_event();
  s.complete(-1);
  EXPECT_EQ(s.take_output().back(), 'T'); // in a block
  s.feed(query_message("SELECT broken"));
  EXPECT_EQ(std::get<run_event>(*s.next_event()).step, transaction_step::inside);
  s.fail({"ERROR", "42703", "no such column", ""});
  EXPECT_EQ(s.take_output().back(), 'E'); // a failed block
  s.feed(query_message("COMMIT"));
  EXPECT_EQ(std::get<run_event>(*s.next_event()).step, transaction_step::end);
  s.complete(-1);
  out = s.take_output();
  EXPECT_EQ(completions(out), std::vector<std::string>{"ROLLBACK"});
  EXPECT_EQ(out.back(), 'I');
}

TEST(pgwire_session, commit_outside_a_block_warns_and_settings_are_local) {
  auto s = started();
  s.feed(query_message("COMMIT"));
  EXPECT_FALSE(s.next_event());
  auto out = s.take_output();
  EXPECT_EQ(completions(out), std::vector<std::string>{"COMMIT"});
  EXPECT_EQ(tags(out), "NCZ"); // with a warning: no transaction in progress
  // Not the session's block: the server's prepared transactions, its errors.
  for (auto sql : {"COMMIT PREPARED 'tx1'", "ROLLBACK PREPARED 'tx1'", "ROLLBACK TO a",
                   "COMMIT AND CHAIN"}) {
    s.feed(query_message(sql));
    auto ev = s.next_event();
    ASSERT_TRUE(ev) << sql;
    EXPECT_EQ(std::get<run_event>(*ev).step, transaction_step::none) << sql;
    s.fail({"ERROR", "42704", "no such prepared transaction", ""});
    s.take_output();
  }

  s.feed(query_message("SET application_name = 'report'; SHOW application_name"));
  EXPECT_FALSE(s.next_event());
  out = s.take_output();
  EXPECT_EQ(tags(out), "CTDCSZ"); // SET, SHOW's row, ParameterStatus
  EXPECT_NE(out.find("report"), std::string::npos);
}

TEST(pgwire_session, show_and_set_take_names_in_any_case) {
  auto s = started();
  s.feed(query_message("SHOW timezone; SHOW Server_Version"));
  EXPECT_FALSE(s.next_event());
  auto out = s.take_output();
  EXPECT_EQ(tags(out), "TDCTDCZ");
  EXPECT_NE(out.find("UTC"), std::string::npos);
  EXPECT_NE(out.find("(QueryFlux)"), std::string::npos);

  // A reported one is reported again; another is kept without a report.
  s.feed(query_message("SET TimeZone TO 'Europe/Paris'; SET search_path = app; "
                       "SHOW SEARCH_PATH; SHOW TIMEZONE"));
  EXPECT_FALSE(s.next_event());
  out = s.take_output();
  EXPECT_EQ(tags(out), "CCTDCTDCSZ");
  EXPECT_NE(out.find(std::string("TimeZone\0Europe/Paris\0", 22)), std::string::npos);
  EXPECT_NE(out.find("app"), std::string::npos);

  s.feed(query_message("SET SESSION statement_timeout = 5000;\n  SHOW statement_timeout"));
  out = s.take_output();
  EXPECT_EQ(tags(out), "CTDCZ");
  EXPECT_NE(out.find("5000"), std::string::npos);

  s.feed(query_message("SET application_name = tomato; SHOW application_name"));
  out = s.take_output();
  EXPECT_NE(out.find(std::string("application_name\0tomato\0", 24)), std::string::npos);

  s.feed(query_message("SHOW no_such_setting"));
  out = s.take_output();
  EXPECT_NE(out.find("42704"), std::string::npos);
  EXPECT_EQ(out.back(), 'I');
}

TEST(pgwire_session, settings_go_to_an_engine_that_has_them) {
  auto opts = test_options();
  std::vector<std::string> asked;
  opts.settings_on_server = [&](std::string_view sql) {
    asked.emplace_back(sql);
    return sql.find("engine_has_it") != std::string_view::npos;
  };
  server_session s{opts};
  s.feed(startup_bytes("alice"));
  ASSERT_TRUE(s.next_event());
  s.accept();
  s.take_output();

  for (std::string sql : {"SET search_path = engine_has_it", "SHOW engine_has_it",
                          "RESET engine_has_it", "DEALLOCATE PREPARE engine_has_it"}) {
    s.feed(query_message(sql));
    auto ev = s.next_event();
    ASSERT_TRUE(ev) << sql;
    EXPECT_EQ(std::get<run_event>(*ev).sql, sql);
    s.complete(-1);
    s.take_output();
  }
  // Elsewhere answered here, as before; DISCARD and the like always are,
  // and so is the client's application_name.
  s.feed(query_message("SET search_path = app; SHOW search_path; DISCARD ALL; "
                       "SET SESSION application_name=engine_has_it; SHOW application_name"));
  EXPECT_FALSE(s.next_event());
  auto out = s.take_output();
  EXPECT_EQ(tags(out), "CTDCCCTDCSZ");
  EXPECT_NE(out.find(std::string("application_name\0engine_has_it\0", 30)), std::string::npos);
  EXPECT_EQ(asked.size(), 6u); // SET, SHOW, RESET, DEALLOCATE, SET, SHOW: not DISCARD, application_name
}

TEST(sql_statements, settings_beyond_the_transaction_are_told_apart) {
  for (auto yes : {"SET search_path = app", "set session statement_timeout = 100", "RESET ALL",
                   "reset role", "SET ROLE reader", "SET SESSION AUTHORIZATION bob",
                   "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY", "SET TIME ZONE 'UTC'"})
    EXPECT_TRUE(sql::changes_session_setting(yes)) << yes;
  for (auto no : {"SET LOCAL search_path = app", "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE",
                  "SELECT 'SET x = 1'", "SETTINGS", "RESETS", "SHOW search_path", ""})
    EXPECT_FALSE(sql::changes_session_setting(no)) << no;
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

namespace {

std::string tagged(char tag, const std::string& body) {
  std::string out(1, tag);
  put_be_u32(out, static_cast<uint32_t>(body.size() + 4));
  return out + body;
}

std::string parse_msg(const std::string& name, const std::string& sql,
                      std::vector<uint32_t> types = {}) {
  std::string body;
  put_cstring(body, name);
  put_cstring(body, sql);
  put_be_u16(body, static_cast<uint16_t>(types.size()));
  for (auto t : types)
    put_be_u32(body, t);
  return tagged('P', body);
}

std::string bind_msg(const std::string& portal, const std::string& stmt,
                     const std::vector<std::optional<std::string>>& params,
                     int16_t param_format = 0, int16_t result_format = 0) {
  std::string body;
  put_cstring(body, portal);
  put_cstring(body, stmt);
  put_be_u16(body, 1);
  put_be_u16(body, static_cast<uint16_t>(param_format));
  put_be_u16(body, static_cast<uint16_t>(params.size()));
  for (const auto& p : params) {
    if (!p) {
      put_be_u32(body, static_cast<uint32_t>(-1));
      continue;
    }
    put_be_u32(body, static_cast<uint32_t>(p->size()));
    body += *p;
  }
  put_be_u16(body, 1);
  put_be_u16(body, static_cast<uint16_t>(result_format));
  return tagged('B', body);
}

std::string describe_msg(char kind, const std::string& name) {
  std::string body(1, kind);
  put_cstring(body, name);
  return tagged('D', body);
}

std::string execute_msg(const std::string& portal, uint32_t max_rows = 0) {
  std::string body;
  put_cstring(body, portal);
  put_be_u32(body, max_rows);
  return tagged('E', body);
}

row_batch numbers(int from, int to) {
  row_batch b;
  b.width = 1;
  for (int i = from; i <= to; ++i)
    b.cells.emplace_back(std::to_string(i));
  return b;
}

const std::string sync_msg = tagged('S', "");

} // namespace

TEST(pgwire_session, extended_query_runs_once_for_describe_and_execute) {
  auto s = started();
  s.feed(parse_msg("", "SELECT $1::INTEGER AS x") + bind_msg("", "", {"5"})
         + describe_msg('P', "") + execute_msg("") + sync_msg);
  auto ev = s.next_event();
  ASSERT_TRUE(ev);
  auto& run = std::get<run_event>(*ev);
  EXPECT_EQ(run.sql, "SELECT $1::INTEGER AS x");
  ASSERT_EQ(run.params.size(), 1u);
  EXPECT_EQ(run.params[0], "5");
  EXPECT_FALSE(s.next_event()); // one run answers both
  EXPECT_TRUE(s.columns({{"x", {type_id::integer}}}));
  s.rows(one_row("5"));
  s.complete(-1);
  auto out = s.take_output();
  EXPECT_EQ(tags(out), "12TDCZ");
  EXPECT_EQ(completions(out), std::vector<std::string>{"SELECT 1"});
}

TEST(pgwire_session, execute_row_limits_suspend_and_resume_the_portal) {
  auto s = started();
  s.feed(parse_msg("", "SELECT n FROM t") + bind_msg("c1", "", {})
         + describe_msg('P', "c1") + execute_msg("c1", 2) + tagged('H', ""));
  auto ev = s.next_event();
  ASSERT_TRUE(ev && std::holds_alternative<run_event>(*ev));
  EXPECT_TRUE(s.columns({{"n", {type_id::integer}}}));
  s.rows(numbers(1, 3)); // a page with more rows than the limit
  EXPECT_FALSE(s.wants_rows());
  s.suspend();
  EXPECT_EQ(tags(s.take_output()), "12TDDs");

  // The held row (3) goes first, then the driver is asked to read on.
  s.feed(execute_msg("c1", 2) + tagged('H', ""));
  ev = s.next_event();
  ASSERT_TRUE(ev && std::holds_alternative<resume_event>(*ev));
  EXPECT_EQ(tags(s.take_output()), "D");
  s.rows(numbers(4, 5)); // 4 fills the limit, 5 is held
  EXPECT_FALSE(s.wants_rows());
  s.suspend();
  EXPECT_EQ(tags(s.take_output()), "Ds");

  // The run ends with rows still held: they wait for the next Execute.
  s.feed(execute_msg("c1", 2) + tagged('H', ""));
  ev = s.next_event();
  ASSERT_TRUE(ev && std::holds_alternative<resume_event>(*ev));
  s.rows(numbers(6, 8)); // 5 went first; 6 fills the limit
  s.complete(-1);
  EXPECT_EQ(tags(s.take_output()), "DDs");
  s.feed(execute_msg("c1", 0) + sync_msg);
  EXPECT_FALSE(s.next_event());
  auto out = s.take_output();
  EXPECT_EQ(tags(out), "DDCZ"); // rows 7 and 8
  EXPECT_EQ(completions(out), std::vector<std::string>{"SELECT 2"});
}

TEST(pgwire_session, a_describe_without_its_execute_runs_once_and_waits_for_it) {
  // pg-cursor: Parse, Bind, Describe, Flush; each Execute comes later.
  auto s = started();
  s.feed(parse_msg("", "SELECT n FROM t") + bind_msg("c1", "", {}) + describe_msg('P', "c1")
         + tagged('H', ""));
  auto ev = s.next_event();
  ASSERT_TRUE(ev && std::holds_alternative<run_event>(*ev));
  EXPECT_FALSE(s.relayable()) << "a relay would pass every row on now";
  EXPECT_TRUE(s.columns({{"n", {type_id::integer}}}));
  EXPECT_FALSE(s.wants_rows()) << "no rows before an Execute";
  s.rows(numbers(1, 3));
  s.suspend();
  EXPECT_EQ(tags(s.take_output()), "12T"); // no rows, no PortalSuspended

  // The Execute takes the held rows; the driver reads on from the same run.
  s.feed(execute_msg("c1", 2) + tagged('H', ""));
  EXPECT_FALSE(s.next_event()) << "two held rows fill the limit";
  EXPECT_EQ(tags(s.take_output()), "DDs");
  s.feed(execute_msg("c1", 0) + sync_msg);
  ev = s.next_event();
  ASSERT_TRUE(ev && std::holds_alternative<resume_event>(*ev));
  s.rows(numbers(4, 4));
  s.complete(-1);
  auto out = s.take_output();
  EXPECT_EQ(tags(out), "DDCZ"); // rows 3 and 4
  EXPECT_EQ(completions(out), std::vector<std::string>{"SELECT 2"});

  // A command's Describe: NoData, and its ending waits for the Execute.
  s.feed(parse_msg("", "INSERT INTO t VALUES (1)") + bind_msg("", "", {}) + describe_msg('P', "")
         + tagged('H', ""));
  ev = s.next_event();
  ASSERT_TRUE(ev && std::holds_alternative<run_event>(*ev));
  EXPECT_TRUE(s.columns({}));
  s.complete(1);
  EXPECT_EQ(tags(s.take_output()), "12n");
  s.feed(execute_msg("", 0) + sync_msg);
  EXPECT_FALSE(s.next_event()) << "it ran once, at the Describe";
  out = s.take_output();
  EXPECT_EQ(tags(out), "CZ");
  EXPECT_EQ(completions(out), std::vector<std::string>{"INSERT 0 1"});
}

TEST(pgwire_session, an_execute_read_as_a_describe_run_pauses_takes_the_run_ending_there) {
  // The Execute came while the Describe's run was going; the run ends in
  // the batch that paused it.
  auto s = started();
  s.feed(parse_msg("", "SELECT n FROM t") + bind_msg("c1", "", {}) + describe_msg('P', "c1")
         + tagged('H', ""));
  ASSERT_TRUE(s.next_event());
  EXPECT_TRUE(s.columns({{"n", {type_id::integer}}}));
  s.feed(execute_msg("c1", 0) + sync_msg); // buffered while it runs
  s.rows(numbers(1, 3));
  s.suspend(); // reads the Execute: the held rows go, the driver reads on
  EXPECT_FALSE(s.awaits_execute());
  auto ev = s.next_event();
  ASSERT_TRUE(ev && std::holds_alternative<resume_event>(*ev));
  s.complete(-1); // the run had ended: the driver ends the Execute with it
  auto out = s.take_output();
  EXPECT_EQ(tags(out), "12TDDDCZ");
  EXPECT_EQ(completions(out), std::vector<std::string>{"SELECT 3"});
}

TEST(pgwire_session, sync_outside_a_transaction_closes_a_suspended_portal) {
  auto s = started();
  s.feed(parse_msg("", "SELECT n FROM t") + bind_msg("", "", {}) + execute_msg("", 1)
         + sync_msg);
  ASSERT_TRUE(s.next_event());
  s.columns({{"n", {type_id::integer}}});
  s.rows(numbers(1, 2));
  s.suspend();
  auto ev = s.next_event();
  ASSERT_TRUE(ev && std::holds_alternative<close_run_event>(*ev));
  EXPECT_EQ(tags(s.take_output()), "12DsZ");
  s.feed(execute_msg("") + sync_msg); // the portal is gone
  EXPECT_EQ(tags(s.take_output()), "EZ");
}

TEST(pgwire_session, close_or_a_new_bind_ends_a_suspended_portal) {
  auto s = started();
  s.feed(parse_msg("", "SELECT n FROM t") + bind_msg("c1", "", {}) + execute_msg("c1", 1)
         + tagged('H', ""));
  ASSERT_TRUE(s.next_event());
  s.columns({{"n", {type_id::integer}}});
  s.rows(numbers(1, 2));
  s.suspend();
  std::string close_body = "P";
  put_cstring(close_body, "c1");
  s.feed(tagged('C', close_body) + tagged('H', ""));
  auto ev = s.next_event();
  ASSERT_TRUE(ev && std::holds_alternative<close_run_event>(*ev));

  s.feed(bind_msg("c1", "", {}) + execute_msg("c1", 1) + tagged('H', ""));
  ASSERT_TRUE(s.next_event());
  s.columns({{"n", {type_id::integer}}});
  s.rows(numbers(1, 2));
  s.suspend();
  s.feed(bind_msg("c1", "", {})); // replaces the portal
  ev = s.next_event();
  ASSERT_TRUE(ev && std::holds_alternative<close_run_event>(*ev));
  s.feed(query_message("SELECT 1")); // no suspended run left to close
  ev = s.next_event();
  ASSERT_TRUE(ev && std::holds_alternative<run_event>(*ev));
}

namespace {

/// In a block, portal `name` of `SELECT n FROM t` executed with a limit
/// of 2 of its 3 rows: suspended.
void suspend_in_a_block(server_session& s, const std::string& name) {
  open_block(s);
  s.feed(parse_msg("", "SELECT n FROM t") + bind_msg(name, "", {}) + execute_msg(name, 2) + sync_msg);
  ASSERT_TRUE(s.next_event());
  s.columns({{"n", {type_id::integer}}});
  s.rows(numbers(1, 3));
  s.suspend();
  s.take_output();
}

} // namespace

TEST(pgwire_session, a_portal_read_in_chunks_goes_on_after_another_statement_in_its_block) {
  auto s = started();
  suspend_in_a_block(s, "C_1"); // pgjdbc's fetch size: C_1 read in chunks, an INSERT between them
  s.feed(parse_msg("", "INSERT INTO u VALUES (1)") + bind_msg("", "", {}) + execute_msg("") + sync_msg);
  auto ev = s.next_event();
  ASSERT_TRUE(ev && std::holds_alternative<resume_event>(*ev)) << "C_1's run is read to its end first";
  s.rows(numbers(4, 6));
  s.complete(-1);
  ev = s.next_event();
  ASSERT_TRUE(ev);
  EXPECT_EQ(std::get<run_event>(*ev).sql, "INSERT INTO u VALUES (1)");
  s.complete(1);
  EXPECT_EQ(tags(s.take_output()), "12CZ") << "nothing of C_1's reaches the client meanwhile";
  // C_1 goes on where it stopped, from what was kept: nothing runs again.
  s.feed(execute_msg("C_1", 2) + sync_msg);
  EXPECT_FALSE(s.next_event());
  EXPECT_EQ(tags(s.take_output()), "DDsZ");
  s.feed(execute_msg("C_1", 0) + sync_msg);
  EXPECT_FALSE(s.next_event());
  auto out = s.take_output();
  EXPECT_EQ(tags(out), "DDCZ");
  EXPECT_NE(out.find("SELECT 2"), std::string::npos);
}

TEST(pgwire_session, a_parked_run_that_failed_tells_its_error_at_its_next_execute) {
  auto s = started();
  suspend_in_a_block(s, "C_1");
  s.feed(query_message("SELECT 1"));
  ASSERT_TRUE(std::holds_alternative<resume_event>(*s.next_event()));
  s.fail({"ERROR", "22012", "division by zero", ""}); // at a row past the first chunk
  auto ev = s.next_event();
  ASSERT_TRUE(ev);
  EXPECT_EQ(std::get<run_event>(*ev).sql, "SELECT 1") << "what came runs; the server answers for its block";
  s.fail({"ERROR", "25P02", "current transaction is aborted", ""});
  s.take_output();
  s.feed(execute_msg("C_1", 2) + sync_msg);
  EXPECT_FALSE(s.next_event());
  auto out = s.take_output();
  EXPECT_EQ(tags(out), "DEZ") << "the row kept, then the run's own error";
  EXPECT_NE(out.find("C22012"), std::string::npos);
  EXPECT_EQ(out.back(), 'E');
}

TEST(pgwire_session, a_portal_too_large_to_keep_fails_rather_than_running_again) {
  auto s = started();
  suspend_in_a_block(s, "C_1");
  s.feed(query_message("INSERT INTO u VALUES (1)"));
  ASSERT_TRUE(std::holds_alternative<resume_event>(*s.next_event()));
  row_batch huge{1, {cell{std::string(65 * 1024 * 1024, 'x')}}};
  s.rows(huge);
  s.complete(-1);
  ASSERT_TRUE(s.next_event()); // the INSERT
  s.complete(1);
  s.take_output();
  s.feed(execute_msg("C_1", 2) + sync_msg);
  EXPECT_FALSE(s.next_event()) << "C_1 does not run again from its first row";
  auto out = s.take_output();
  EXPECT_EQ(tags(out), "EZ");
  EXPECT_NE(out.find("C0A000"), std::string::npos);
}

TEST(pgwire_session, a_suspended_portal_is_described_without_touching_its_run) {
  auto s = started();
  suspend_in_a_block(s, "C_1");
  s.feed(describe_msg('P', "C_1") + execute_msg("C_1", 2) + sync_msg);
  auto out = s.take_output();
  EXPECT_EQ(tags(out).substr(0, 2), "TD") << "its columns, then the row held back";
  auto ev = s.next_event();
  ASSERT_TRUE(ev && std::holds_alternative<resume_event>(*ev)) << "the same run reads on";
}

TEST(pgwire_session, named_statements_are_reused_and_binary_params_read) {
  auto s = started();
  s.feed(parse_msg("q", "SELECT $1 + 1 AS y", {23}) + sync_msg);
  EXPECT_EQ(tags(s.take_output()), "1Z");
  std::string four;
  put_be_u32(four, 41);
  s.feed(bind_msg("", "q", {four}, /*param_format=*/1, /*result_format=*/1)
         + execute_msg("") + sync_msg);
  auto run = std::get<run_event>(*s.next_event());
  EXPECT_EQ(run.params[0], "41"); // binary int4 read as text
  EXPECT_TRUE(s.columns({{"y", {type_id::integer}}}));
  s.rows(one_row("42"));
  s.complete(-1);
  auto out = s.take_output();
  EXPECT_EQ(tags(out), "2DCZ"); // Execute without Describe: no RowDescription
  // The row went out in binary, as the client asked.
  EXPECT_NE(out.find(std::string("\0\0\0\4\0\0\0\x2a", 8)), std::string::npos);
  // A second Parse of the same name is an error.
  s.feed(parse_msg("q", "SELECT 1") + sync_msg);
  EXPECT_NE(s.take_output().find("C42P05"), std::string::npos);
}

TEST(pgwire_session, an_extended_error_skips_to_sync) {
  auto s = started();
  s.feed(bind_msg("", "missing", {}) + execute_msg("") + parse_msg("", "SELECT 1")
         + sync_msg);
  auto out = s.take_output();
  EXPECT_EQ(tags(out), "EZ"); // nothing after the error until Sync
  EXPECT_NE(out.find("C26000"), std::string::npos);
  EXPECT_FALSE(s.next_event());
  // An engine error inside a batch does the same.
  s.feed(parse_msg("", "SELECT broken") + bind_msg("", "", {}) + execute_msg("")
         + sync_msg);
  s.next_event();
  s.fail({"ERROR", "42703", "no such column", ""});
  EXPECT_EQ(tags(s.take_output()), "12EZ");
}

TEST(pgwire_session, describe_statement_announces_parameters) {
  auto s = started();
  s.feed(parse_msg("d", "SELECT $1, $2 WHERE '$9' = $2;", {23}) + describe_msg('S', "d")
         + sync_msg);
  // The columns come from a probe that evaluates no row.
  auto ev = s.next_event();
  ASSERT_TRUE(ev);
  auto& probe = std::get<run_event>(*ev);
  EXPECT_EQ(probe.sql, "SELECT * FROM (SELECT $1, $2 WHERE '$9' = $2\n) AS qf_describe LIMIT 0");
  EXPECT_EQ(probe.params, (std::vector<std::optional<std::string>>(2)));
  EXPECT_EQ(probe.param_types, std::vector<uint32_t>{23}) << "what the client declared, no more";
  EXPECT_TRUE(s.columns({{"a", {type_id::integer}}, {"b", {type_id::varchar}}}));
  s.complete(-1);
  auto out = s.take_output();
  EXPECT_EQ(tags(out), "1tTZ");
  // int4 as declared, then text for the undeclared $2; '$9' is a string.
  EXPECT_NE(out.find(std::string("\0\2\0\0\0\x17\0\0\0\x19", 10)),
            std::string::npos);
}

TEST(pgwire_session, describe_statement_falls_back_to_no_data) {
  auto s = started();
  // A probe that fails is not the client's error.
  s.feed(parse_msg("d", "SELECT $1") + describe_msg('S', "d") + sync_msg);
  ASSERT_TRUE(s.next_event());
  s.fail({"ERROR", "42P18", "could not determine data type of parameter $1", ""});
  EXPECT_EQ(tags(s.take_output()), "1tnZ");
  // Commands have no columns; nothing runs.
  s.feed(parse_msg("i", "INSERT INTO t VALUES ($1)") + describe_msg('S', "i") + sync_msg);
  EXPECT_FALSE(s.next_event());
  EXPECT_EQ(tags(s.take_output()), "1tnZ");
  // Inside a block a failed probe would abort it on the backend: no probe.
  open_block(s);
  s.feed(parse_msg("q", "SELECT 1") + describe_msg('S', "q") + sync_msg);
  EXPECT_FALSE(s.next_event());
  EXPECT_EQ(tags(s.take_output()), "1tnZ");
}

namespace {

server_session started_describing_on_server() {
  auto opts = test_options();
  opts.statements_described_on_server = [](std::string_view) { return true; };
  return started(std::move(opts));
}

/// A ParameterDescription of these types, as a server sends it.
std::string parameter_description_of(std::vector<uint32_t> types) {
  std::string body;
  byte_writer::put_be_u16(body, static_cast<uint16_t>(types.size()));
  for (auto t : types)
    byte_writer::put_be_u32(body, t);
  return tagged('t', body);
}

} // namespace

TEST(pgwire_session, the_server_describes_a_statement_and_its_parameter_types_are_bound_by) {
  auto s = started_describing_on_server();
  s.feed(parse_msg("ins", "INSERT INTO t VALUES ($1, $2) RETURNING id", {0, 25})
         + describe_msg('S', "ins") + sync_msg);
  auto ev = s.next_event();
  ASSERT_TRUE(ev);
  ASSERT_TRUE(s.relays_a_statement_describe());
  EXPECT_EQ(s.described_statement(), "INSERT INTO t VALUES ($1, $2) RETURNING id");
  EXPECT_EQ(s.described_types(), (std::vector<uint32_t>{0, 25}));
  // What a driver that cannot relay runs: nothing of the client's.
  EXPECT_EQ(std::get<run_event>(*ev).sql, "SELECT WHERE false");
  EXPECT_TRUE(std::get<run_event>(*ev).params.empty());
  s.relay(parameter_description_of({23, 25}) + tagged('T', std::string("\0\0", 2)));
  s.relay_end(false);
  EXPECT_EQ(tags(s.take_output()), "1tTZ");
  // The client binds $1 in binary as the int4 it was told: read as one.
  std::string four("\0\0\0\x2a", 4);
  s.feed(bind_msg("", "ins", {four, std::string("x")}, 1) + execute_msg("") + sync_msg);
  ev = s.next_event();
  ASSERT_TRUE(ev);
  auto& run = std::get<run_event>(*ev);
  EXPECT_EQ(run.params[0], "42");
  EXPECT_EQ(run.param_types, (std::vector<uint32_t>{23, 25}));
}

TEST(pgwire_session, a_statement_the_server_cannot_describe_fails_to_sync_and_its_block) {
  auto s = started_describing_on_server();
  open_block(s);
  s.feed(parse_msg("bad", "SELECT nope") + describe_msg('S', "bad")
         + bind_msg("", "bad", {}) + execute_msg("") + sync_msg);
  auto ev = s.next_event();
  ASSERT_TRUE(ev);
  EXPECT_EQ(std::get<run_event>(*ev).step, transaction_step::inside);
  const char fields[] = "SERROR\0C42703\0Mcolumn \"nope\" does not exist\0";
  s.relay(tagged('E', std::string(fields, sizeof fields))); // with the terminating NUL
  s.relay_end(true);
  EXPECT_FALSE(s.next_event()) << "the Execute after the failed Describe is skipped";
  auto out = s.take_output();
  EXPECT_EQ(tags(out), "1EZ");
  EXPECT_EQ(out.back(), 'E') << "the block failed, as the server's has";
}

TEST(pgwire_session, a_connection_that_cannot_relay_runs_the_probe_where_one_is_safe) {
  auto s = started_describing_on_server();
  s.feed(parse_msg("q", "SELECT $1::int AS n") + describe_msg('S', "q") + sync_msg);
  auto ev = s.next_event();
  ASSERT_TRUE(ev);
  EXPECT_EQ(std::get<run_event>(*ev).sql, "SELECT * FROM (SELECT $1::int AS n\n) AS qf_describe LIMIT 0");
  EXPECT_TRUE(s.columns({{"n", {type_id::integer}}}));
  s.complete(-1);
  EXPECT_EQ(tags(s.take_output()), "1tTZ");
  EXPECT_FALSE(s.relays_a_statement_describe());
}

TEST(pgwire_session, binary_results_for_unsupported_types_are_refused) {
  auto s = started();
  s.feed(parse_msg("", "SELECT INTERVAL '1 day' AS d")
         + bind_msg("", "", {}, 0, /*result_format=*/1) + execute_msg("")
         + sync_msg);
  s.next_event();
  EXPECT_FALSE(s.columns({{"d", {type_id::interval}}}));
  auto out = s.take_output();
  EXPECT_NE(out.find("C0A000"), std::string::npos);
  EXPECT_EQ(out.back(), 'I');
}

TEST(pgwire_session, a_function_call_is_refused_and_the_connection_goes_on) {
  auto s = started();
  // lo_open(oid, mode) by the fast-path interface, as pgjdbc's large objects call it.
  std::string call;
  byte_writer::put_be_u32(call, 952); // the function's oid
  byte_writer::put_be_u16(call, 0);   // no argument formats
  byte_writer::put_be_u16(call, 0);   // no arguments
  byte_writer::put_be_u16(call, 0);   // the result as text
  s.feed(tagged('F', call));
  EXPECT_FALSE(s.closing());
  auto out = s.take_output();
  EXPECT_EQ(tags(out), "EZ");
  EXPECT_NE(out.find("C0A000"), std::string::npos);
  s.feed(query_message("SELECT 1"));
  EXPECT_TRUE(s.next_event());
}

TEST(pgwire_session, a_function_call_after_an_error_waits_for_the_sync_as_all_else) {
  auto s = started();
  std::string call;
  byte_writer::put_be_u32(call, 952);
  byte_writer::put_be_u16(call, 0);
  byte_writer::put_be_u16(call, 0);
  byte_writer::put_be_u16(call, 0);
  s.feed(bind_msg("", "missing", {}) + tagged('F', call) + sync_msg);
  auto out = s.take_output();
  EXPECT_EQ(tags(out), "EZ") << "one error, one ReadyForQuery";
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

TEST(sql_statements, statements_that_leave_session_state_are_told_apart) {
  for (auto yes : {"CREATE TEMP TABLE t (x int)", "create temporary table t as select 1",
                   "CREATE GLOBAL TEMPORARY TABLE t (x int)", "create or replace temp view v as select 1",
                   "SELECT 1; /* then */ CREATE TEMPORARY TABLE t (x int)",
                   "SELECT * INTO TEMP t FROM x", "PREPARE q AS SELECT 1", "LOCK TABLES t WRITE",
                   "DECLARE c CURSOR WITH HOLD FOR SELECT 1", "SELECT GET_LOCK('job', 10)",
                   "select pg_advisory_lock(1)", "SELECT pg_try_advisory_lock_shared(7)",
                   "SELECT @v := 5", "SELECT 'x' INTO @v", "SET @v = 1", "set @a = 1, @@sql_mode = ''",
                   "USE reports", "use `my db`", "HANDLER t OPEN AS h", "CREATE TABLE pg_temp.t (x int)",
                   "select * from set_config('statement_timeout', '1ms', false)",
                   "SELECT SET_CONFIG ('a.b', $1, 1 = 0)", "select pg_catalog.\"set_config\"('x', 'y', false)",
                   "DO $$ BEGIN PERFORM set_config('search_path', 'a', false); END $$",
                   "WITH s AS (SELECT set_config('work_mem', '8MB', false)) SELECT * FROM s",
                   "SELECT 1 INTO  @v", "select 1 into\n@v", "SELECT 1 INTO /* it */ @v",
                   "CALL p(1, @out)", "EXECUTE IMMEDIATE 'SET @v = 1'", "EXECUTE s USING @a",
                   "FLUSH TABLES t WITH READ LOCK", "flush tables with read lock",
                   "FLUSH TABLES t FOR EXPORT", "BACKUP LOCK t",
                   "do $$ begin set search_path = a, public; end $$",
                   "DO $$BEGIN EXECUTE format('SET %s = %L', 'statement_timeout', '1s'); END$$",
                   "DO $$ BEGIN EXECUTE 'CREATE TEMP TABLE t (x int)'; END $$",
                   "DO $$ BEGIN IF true THEN SET work_mem = '8MB'; END IF; END $$",
                   "DO $$ BEGIN UPDATE t SET x = 1; RESET work_mem; END $$", "SELECT 1 INTO@v"})
    EXPECT_TRUE(sql::leaves_session_state(yes)) << yes;
  for (auto no : {"CREATE TABLE temperatures (x int)", "SELECT 'create temp table' AS t",
                  "-- create temp table t\nSELECT 1", "SELECT pg_advisory_xact_lock(1)",
                  "SELECT abalance FROM pgbench_accounts WHERE aid = 1", "SELECT data @> '{}' FROM t",
                  "DO $$ BEGIN x := 1; END $$", "SELECT x::int FROM t", "SELECT @v",
                  "DECLARE c CURSOR FOR SELECT 1", "SELECT my_get_lock(1)", "SET @@autocommit = 1",
                  "SET NAMES utf8mb4", "SELECT @@version", "SELECT user FROM t",
                  "SELECT my_set_config('a')", "SELECT current_setting('work_mem')", "SELECT \"x\"(1)",
                  "SELECT a INTO b FROM t WHERE c = @v", "CALL p(1)", "FLUSH TABLES", "FLUSH PRIVILEGES",
                  "DO $$ BEGIN PERFORM pg_sleep(0); END $$", "DO $$ BEGIN INSERT INTO offsets VALUES (1); END $$",
                  "DO $$ BEGIN UPDATE t SET x = 1; END $$", "DO $$ BEGIN RAISE NOTICE 'attempt'; END $$"})
    EXPECT_FALSE(sql::leaves_session_state(no)) << no;
}

TEST(sql_statements, function_calls_are_told_from_names_alike) {
  for (auto yes : {"SELECT lastval()", "select LASTVAL ()", "SELECT pg_catalog.currval('s')",
                   "SELECT \"currval\"('s')", "INSERT INTO t VALUES (currval('s') + 1)"})
    EXPECT_TRUE(sql::calls_function(yes, {"lastval", "currval"})) << yes;
  for (auto no : {"SELECT lastvalue FROM t", "SELECT my_lastval()",
                  "SELECT currval_of(1)", "SELECT 1"})
    EXPECT_FALSE(sql::calls_function(no, {"lastval", "currval"})) << no;
}

TEST(sql_statements, after_leading_keyword_skips_blanks_and_comments_on_both_sides) {
  EXPECT_EQ(sql::after_leading_keyword("SET x = 1"), "x = 1");
  EXPECT_EQ(sql::after_leading_keyword("\n  SET /* why */ \t search_path TO app"),
            "search_path TO app");
  EXPECT_EQ(sql::after_leading_keyword("RESET"), "");
  EXPECT_EQ(sql::after_leading_keyword("   "), "");
}

TEST(pgwire_session, reset_restores_defaults_and_deallocate_forgets_statements) {
  auto s = started();
  s.feed(query_message("SET TimeZone TO 'Europe/Paris'; SET search_path = app"));
  s.take_output();
  s.feed(query_message("RESET timezone; SHOW TimeZone"));
  auto out = s.take_output();
  EXPECT_EQ(completions(out), (std::vector<std::string>{"RESET", "SHOW"}));
  EXPECT_NE(out.find(std::string("TimeZone\0UTC\0", 13)), std::string::npos); // reported again
  s.feed(query_message("RESET ALL; SHOW search_path"));
  out = s.take_output();
  EXPECT_NE(out.find("42704"), std::string::npos); // forgotten with ALL

  // Two statements prepared by the protocol; DEALLOCATE drops one by name.
  s.feed(parse_msg("keep", "SELECT 1") + parse_msg("drop", "SELECT 2") + sync_msg);
  s.take_output();
  s.feed(query_message("DEALLOCATE drop"));
  EXPECT_EQ(completions(s.take_output()), std::vector<std::string>{"DEALLOCATE"});
  s.feed(bind_msg("", "drop", {}) + sync_msg);
  EXPECT_NE(s.take_output().find("26000"), std::string::npos);
  s.feed(bind_msg("", "keep", {}) + sync_msg);
  EXPECT_EQ(s.take_output().find("26000"), std::string::npos);
  s.feed(query_message("DISCARD ALL"));
  EXPECT_EQ(completions(s.take_output()), std::vector<std::string>{"DISCARD ALL"});
  s.feed(bind_msg("", "keep", {}) + sync_msg);
  EXPECT_NE(s.take_output().find("26000"), std::string::npos);
}

TEST(pgwire_session, rollback_to_a_savepoint_keeps_the_block_and_its_connection) {
  auto s = started();
  s.feed(query_message("BEGIN"));
  s.next_event();
  s.complete(-1);
  s.take_output();
  s.feed(query_message("SELECT broken"));
  s.next_event();
  s.fail({"ERROR", "42703", "no such column", ""});
  EXPECT_EQ(s.take_output().back(), 'E');
  s.feed(query_message("ROLLBACK TO SAVEPOINT a"));
  EXPECT_EQ(std::get<run_event>(*s.next_event()).step, transaction_step::inside);
  s.complete(-1);
  EXPECT_EQ(s.take_output().back(), 'T'); // usable again, still in the block
  s.feed(query_message("COMMIT AND CHAIN"));
  EXPECT_EQ(std::get<run_event>(*s.next_event()).step, transaction_step::inside);
  s.complete(-1);
  EXPECT_EQ(s.take_output().back(), 'T');
  s.feed(query_message("ROLLBACK"));
  EXPECT_EQ(std::get<run_event>(*s.next_event()).step, transaction_step::end);
  s.complete(-1);
  EXPECT_EQ(s.take_output().back(), 'I');
}

// -- COPY FROM STDIN, relayed -----------------------------------------------------

namespace {

/// A session running a simple Query's COPY, the server's CopyInResponse
/// relayed and taken by the session.
server_session copying(const std::string& pipelined = {}) {
  auto s = started();
  s.feed(query_message("COPY t FROM STDIN") + pipelined);
  auto ev = s.next_event();
  EXPECT_TRUE(ev && std::holds_alternative<run_event>(*ev));
  EXPECT_TRUE(s.relayable());
  EXPECT_TRUE(s.copy_in_start());
  return s;
}

} // namespace

TEST(pgwire_session, copy_data_goes_to_the_server_whole_flush_and_sync_ignored) {
  auto line1 = tagged('d', "1\n");
  auto line2 = tagged('d', "2\n");
  auto done = tagged('c', "");
  // What came before the server asked is taken too.
  auto s = copying(line1);
  EXPECT_TRUE(s.copying_in());
  EXPECT_TRUE(s.output_due()); // the CopyInResponse goes out now
  EXPECT_EQ(s.take_copy_messages(), line1);
  EXPECT_FALSE(s.copy_in_sent());
  // Split across reads, with a Flush and a Sync among them (libpq sends
  // them when it does not know the command was a COPY).
  auto rest = line2 + tagged('H', "") + sync_msg + done + query_message("SELECT 1");
  s.feed(rest.substr(0, 3));
  EXPECT_EQ(s.take_copy_messages(), "");
  s.feed(rest.substr(3));
  EXPECT_EQ(s.take_copy_messages(), line2 + done);
  EXPECT_TRUE(s.copy_in_sent());
  EXPECT_FALSE(s.next_event()); // the next Query waits for the server's answer

  s.relay(tagged('C', std::string("COPY 2\0", 7)));
  s.relay_end(false);
  EXPECT_FALSE(s.copying_in());
  auto ev = s.next_event();
  ASSERT_TRUE(ev);
  EXPECT_EQ(std::get<run_event>(*ev).sql, "SELECT 1");
}

TEST(pgwire_session, copy_fail_ends_the_copy_and_goes_to_the_server) {
  auto s = copying();
  auto fail = tagged('f', std::string("no thanks\0", 10));
  s.feed(fail + tagged('d', "late\n"));
  EXPECT_EQ(s.take_copy_messages(), fail);
  EXPECT_TRUE(s.copy_in_sent());
}

TEST(pgwire_session, another_message_during_a_copy_fails_it_as_postgresql_does) {
  auto s = copying();
  s.feed(tagged('d', "1\n") + query_message("SELECT 1"));
  auto forwarded = s.take_copy_messages();
  EXPECT_EQ(tags(forwarded), "df");
  EXPECT_NE(forwarded.find("unexpected message type 0x51 during COPY from stdin"),
            std::string::npos);
  EXPECT_TRUE(s.copy_in_sent());
  s.relay_end(true);
  EXPECT_FALSE(s.next_event()); // the Query was dropped, as the server drops it
  EXPECT_EQ(tags(s.take_output()), "Z");
}

TEST(pgwire_session, copy_data_after_the_server_ended_the_copy_is_ignored) {
  // The server failed a row and answered while the client still sends.
  auto s = copying();
  s.relay_end(true);
  s.take_output();
  s.feed(tagged('d', "3\n") + tagged('c', "") + tagged('f', std::string("x\0", 2))
         + query_message("SELECT 2"));
  EXPECT_FALSE(s.closing());
  auto ev = s.next_event();
  ASSERT_TRUE(ev);
  EXPECT_EQ(std::get<run_event>(*ev).sql, "SELECT 2");
  EXPECT_EQ(s.take_copy_messages(), "");
}

TEST(pgwire_session, an_execute_cannot_take_a_copy) {
  auto s = started();
  s.feed(parse_msg("", "COPY t FROM STDIN") + bind_msg("", "", {}) + execute_msg("") + sync_msg);
  auto ev = s.next_event();
  ASSERT_TRUE(ev && std::holds_alternative<run_event>(*ev));
  EXPECT_FALSE(s.copy_in_start());
  EXPECT_FALSE(s.copying_in());
}

TEST(pgwire_session, listen_is_refused_and_unlisten_has_nothing_to_do) {
  // Notifications reach a backend session, which is pooled: LISTEN could
  // only hear for whoever runs on that connection next.
  auto s = started();
  s.feed(query_message("LISTEN jobs; SELECT 1"));
  EXPECT_FALSE(s.next_event()); // the error ends the whole query
  auto out = s.take_output();
  EXPECT_EQ(tags(out), "EZ");
  EXPECT_NE(out.find("0A000"), std::string::npos);
  s.feed(query_message("UNLISTEN *"));
  EXPECT_FALSE(s.next_event());
  EXPECT_EQ(completions(s.take_output()), std::vector<std::string>{"UNLISTEN"});
}

TEST(pgwire_session, a_connection_keeps_a_bounded_number_and_size_of_statements_and_portals) {
  // A client that prepares per query and never closes gets 53400, not
  // the gateway's memory.
  session_options opts;
  opts.max_kept_entries = 3;
  opts.max_kept_bytes = 4096;
  server_session s{opts};
  s.feed(startup_bytes("alice"));
  s.next_event();
  s.accept();
  s.take_output();
  s.feed(parse_msg("s1", "SELECT 1") + parse_msg("s2", "SELECT 2") + parse_msg("s3", "SELECT 3")
         + parse_msg("s4", "SELECT 4") + sync_msg);
  auto out = s.take_output();
  EXPECT_EQ(tags(out), "111EZ");
  EXPECT_NE(out.find("53400"), std::string::npos);
  // Closing one makes room; the unnamed statement replaces itself.
  s.feed(tagged('C', std::string("Ss1\0", 4)) + parse_msg("s4", "SELECT 4")
         + parse_msg("", "SELECT 5") + parse_msg("", "SELECT 6") + sync_msg);
  EXPECT_EQ(tags(s.take_output()), "3111Z");
  // Too large, whatever the count.
  s.feed(query_message("DEALLOCATE ALL"));
  s.take_output();
  s.feed(parse_msg("big", "SELECT '" + std::string(5000, 'x') + "'") + sync_msg);
  EXPECT_EQ(tags(s.take_output()), "EZ");
  s.feed(parse_msg("small", "SELECT 1") + sync_msg);
  EXPECT_EQ(tags(s.take_output()), "1Z");
}

TEST(pgwire_session, a_connection_sets_a_bounded_number_of_settings) {
  auto s = started();
  std::string script;
  for (int i = 0; i < 1000; ++i)
    script += "SET qf.setting_" + std::to_string(i) + " = 1;";
  s.feed(query_message(script + "SET qf.one_too_many = 1"));
  auto out = s.take_output();
  EXPECT_EQ(completions(out).size(), 1000u);
  EXPECT_NE(out.find("53400"), std::string::npos);
  s.feed(query_message("SET qf.setting_7 = 2")); // a known one changes as ever
  EXPECT_EQ(completions(s.take_output()), std::vector<std::string>{"SET"});
}

TEST(pgwire_session, a_batch_that_begins_with_begin_opens_the_clients_block_with_its_options) {
  auto s = started_with_scripts_in_one_transaction();
  // pgjdbc's setReadOnly(true): BEGIN READ ONLY in one batch with the query.
  s.feed(parse_msg("", "BEGIN READ ONLY") + bind_msg("", "", {}) + execute_msg("")
         + parse_msg("", "INSERT INTO t VALUES (1)") + bind_msg("", "", {}) + execute_msg("") + sync_msg);
  EXPECT_EQ(run_next(s), (std::pair<std::string, transaction_step>{"BEGIN READ ONLY", transaction_step::begin}))
    << "no block of ours first, which would answer it here and lose READ ONLY";
  s.complete(0);
  EXPECT_EQ(run_next(s), (std::pair<std::string, transaction_step>{"INSERT INTO t VALUES (1)",
                                                                   transaction_step::inside}));
  s.fail({"ERROR", "25006", "cannot execute INSERT in a read-only transaction", ""});
  EXPECT_EQ(run_next(s).first, "(none)") << "the block is the client's: no COMMIT or ROLLBACK of ours";
  auto out = s.take_output();
  EXPECT_EQ(out.back(), 'E');
}

TEST(pgwire_session, a_batch_before_one_sync_runs_in_one_implicit_transaction) {
  auto s = started_with_scripts_in_one_transaction();
  s.feed(parse_msg("", "INSERT INTO t VALUES (1)") + bind_msg("", "", {}) + execute_msg("")
         + parse_msg("", "SELECT 1/0") + bind_msg("", "", {}) + execute_msg("") + sync_msg);
  EXPECT_EQ(run_next(s), (std::pair<std::string, transaction_step>{"BEGIN", transaction_step::begin}));
  s.complete(0);
  EXPECT_EQ(run_next(s).second, transaction_step::inside);
  s.complete(1);
  EXPECT_EQ(run_next(s).first, "SELECT 1/0");
  s.fail({"ERROR", "22012", "division by zero", ""});
  EXPECT_EQ(run_next(s), (std::pair<std::string, transaction_step>{"ROLLBACK", transaction_step::end}))
    << "at the Sync: the insert goes with the failure, as on PostgreSQL";
  s.complete(0);
  auto out = s.take_output();
  EXPECT_EQ(tags(out), "12C12EZ");
  EXPECT_EQ(out.back(), 'I');

  // A statement and its Sync: no block of ours (node-postgres, pgbench).
  s.feed(parse_msg("", "INSERT INTO t VALUES (2)") + bind_msg("", "", {}) + describe_msg('P', "")
         + execute_msg("") + sync_msg);
  EXPECT_EQ(run_next(s).first, "INSERT INTO t VALUES (2)");
  s.columns({});
  s.complete(1);
  EXPECT_EQ(run_next(s).first, "(none)");
  EXPECT_EQ(s.take_output().back(), 'I');

  // A batch that succeeds commits at its Sync; a BEGIN in it makes the block the client's.
  s.feed(parse_msg("", "INSERT INTO t VALUES (3)") + bind_msg("", "", {}) + execute_msg("")
         + bind_msg("", "", {}) + execute_msg("") + sync_msg);
  EXPECT_EQ(run_next(s).first, "BEGIN");
  s.complete(0);
  run_next(s);
  s.complete(1);
  run_next(s);
  s.complete(1);
  EXPECT_EQ(run_next(s), (std::pair<std::string, transaction_step>{"COMMIT", transaction_step::end}));
  s.complete(0);
  EXPECT_EQ(tags(s.take_output()), "12C2CZ");
}

TEST(pgwire_session, an_execute_waits_for_the_next_message_to_tell_whether_a_batch_goes_on) {
  auto s = started_with_scripts_in_one_transaction();
  s.feed(parse_msg("", "INSERT INTO t VALUES (1)") + bind_msg("", "", {}) + execute_msg(""));
  EXPECT_EQ(run_next(s).first, "(none)") << "not before what follows it arrives";
  s.feed(sync_msg);
  EXPECT_EQ(run_next(s).first, "INSERT INTO t VALUES (1)") << "its Sync came: no block of ours";
  s.complete(1);
  s.take_output();
  s.feed(parse_msg("", "INSERT INTO t VALUES (2)") + bind_msg("", "", {}) + execute_msg(""));
  s.feed(bind_msg("", "", {}));
  EXPECT_EQ(run_next(s).first, "BEGIN") << "more of the batch came";
}

TEST(pgwire_session, a_portal_that_ran_to_its_end_runs_nothing_again) {
  auto s = started();
  s.feed(parse_msg("", "INSERT INTO t VALUES (1)") + bind_msg("p", "", {}) + execute_msg("p")
         + execute_msg("p") + sync_msg);
  EXPECT_EQ(run_next(s).first, "INSERT INTO t VALUES (1)");
  s.relay_end(false); // relayed, as the fast lane does
  EXPECT_EQ(run_next(s).first, "(none)") << "not inserted twice";
  auto out = s.take_output();
  EXPECT_EQ(tags(out), "12EZ");
  EXPECT_NE(out.find("portal \"p\" cannot be run"), std::string::npos);

  s.feed(parse_msg("", "SELECT 1") + bind_msg("q", "", {}) + execute_msg("q") + execute_msg("q")
         + sync_msg);
  run_next(s);
  s.columns({{"x", {type_id::integer}}});
  s.rows(one_row("1"));
  s.complete(-1);
  EXPECT_EQ(run_next(s).first, "(none)");
  EXPECT_EQ(completions(s.take_output()), (std::vector<std::string>{"SELECT 1", "SELECT 0"}))
    << "a query's portal has no rows left";
}

TEST(pgwire_session, a_query_after_a_portal_closed_early_has_no_row_limit) {
  auto s = started();
  s.feed(parse_msg("", "SELECT g FROM generate_series(1, 10) g") + bind_msg("", "", {})
         + describe_msg('P', "") + execute_msg("", 2) + tagged('H', ""));
  run_next(s);
  s.columns({{"g", {type_id::integer}}});
  s.rows(numbers(1, 2));
  EXPECT_FALSE(s.wants_rows());
  s.suspend();
  s.take_output();
  s.feed(tagged('C', std::string("P\0", 2)) + sync_msg + query_message("SELECT 1"));
  while (auto ev = s.next_event())
    if (auto* run = std::get_if<run_event>(&*ev); run && run->sql == "SELECT 1")
      break;
  EXPECT_TRUE(s.relayable()) << "no limit left over: relayed as any query";
  EXPECT_TRUE(s.wants_rows());
}

TEST(pgwire_session, when_the_implicit_blocks_own_begin_or_commit_fails_the_client_hears_why) {
  auto s = started_with_scripts_in_one_transaction();
  s.feed(query_message("INSERT INTO t VALUES (1); SELECT 2"));
  EXPECT_EQ(run_next(s).first, "BEGIN");
  s.fail({"ERROR", "08006", "connection lost", ""});
  EXPECT_EQ(run_next(s).first, "(none)") << "nothing of the script runs";
  auto out = s.take_output();
  EXPECT_EQ(tags(out), "EZ");
  EXPECT_EQ(out.back(), 'I');

  // A deferred constraint fails at our COMMIT: the script's error, and no block left.
  s.feed(query_message("INSERT INTO t VALUES (1); SELECT 2"));
  run_next(s);
  s.complete(0);
  run_next(s);
  s.complete(1);
  run_next(s);
  s.columns({{"x", {type_id::integer}}});
  s.complete(-1);
  EXPECT_EQ(run_next(s).first, "COMMIT");
  s.fail({"ERROR", "23503", "violates foreign key constraint", ""});
  out = s.take_output();
  EXPECT_EQ(tags(out), "CTCEZ");
  EXPECT_EQ(out.back(), 'I');

  // In a batch: the error, then nothing up to the Sync.
  s.feed(parse_msg("", "INSERT INTO t VALUES (1)") + bind_msg("", "", {}) + execute_msg("")
         + bind_msg("", "", {}) + execute_msg("") + sync_msg);
  EXPECT_EQ(run_next(s).first, "BEGIN");
  s.fail({"ERROR", "08006", "connection lost", ""});
  EXPECT_EQ(run_next(s).first, "(none)");
  out = s.take_output();
  EXPECT_EQ(tags(out), "12EZ"); // the batch's first Parse and Bind, then the error
  EXPECT_EQ(out.back(), 'I');
}
