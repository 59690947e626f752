// The statements a server connection keeps prepared for clients: which
// batch parses, which reuses, and the Close messages that keep the server
// in step, read back with the frontend's own decoder as the server reads
// them.
#include "protocols/pgwire/frontend.hpp"
#include "protocols/pgwire/relay.hpp"
#include "protocols/pgwire/server_statements.hpp"

#include <gtest/gtest.h>

using qf::pgwire::server_statements;

namespace {

/// The names of the statements the Close messages in `out` close.
std::vector<std::string> closed(std::string_view out) {
  std::vector<std::string> names;
  while (!out.empty()) {
    qf::pgwire::frame f;
    auto d = qf::pgwire::next_frame(out, false, 1 << 20, f);
    EXPECT_EQ(d.status, qf::pgwire::decode_status::ok);
    if (d.status != qf::pgwire::decode_status::ok)
      break;
    auto m = qf::pgwire::parse_message(f);
    auto* c = m ? std::get_if<qf::pgwire::close>(&*m) : nullptr;
    EXPECT_TRUE(c) << "tag " << f.tag;
    if (c) {
      EXPECT_EQ(c->kind, 'S');
      names.push_back(c->name);
    }
    out.remove_prefix(d.consumed);
  }
  return names;
}

} // namespace

TEST(pgwire_server_statements, a_statement_is_parsed_once_then_bound_by_its_name) {
  server_statements s;
  std::string out;
  auto first = s.prepare(out, "SELECT $1");
  EXPECT_TRUE(first.parse);
  std::string name{first.name};
  EXPECT_EQ(name.rfind("qf_", 0), 0u);
  auto again = s.prepare(out, "SELECT $1");
  EXPECT_FALSE(again.parse);
  EXPECT_EQ(again.name, name);
  auto other = s.prepare(out, "SELECT $1 + 1");
  EXPECT_TRUE(other.parse);
  EXPECT_NE(other.name, name);
  EXPECT_TRUE(out.empty()); // nothing to close
  EXPECT_EQ(s.size(), 2u);
}

TEST(pgwire_server_statements, past_capacity_the_least_recently_used_is_closed_first) {
  server_statements s{2};
  std::string out;
  std::string a{s.prepare(out, "A").name};
  std::string b{s.prepare(out, "B").name};
  s.prepare(out, "A"); // A is now the more recent
  auto c = s.prepare(out, "C");
  EXPECT_TRUE(c.parse);
  EXPECT_EQ(closed(out), std::vector<std::string>{b});
  EXPECT_EQ(s.size(), 2u);
  out.clear();
  EXPECT_FALSE(s.prepare(out, "A").parse);
  EXPECT_TRUE(s.prepare(out, "B").parse); // evicted: parsed afresh
}

TEST(pgwire_server_statements, a_failed_parse_is_forgotten_and_closed_with_the_next_batch) {
  server_statements s;
  std::string out;
  std::string name{s.prepare(out, "SELECT * FROM nowhere").name};
  s.failed("SELECT * FROM nowhere");
  EXPECT_EQ(s.size(), 0u);
  auto retry = s.prepare(out, "SELECT * FROM nowhere");
  EXPECT_TRUE(retry.parse);
  EXPECT_NE(retry.name, name); // a fresh name: the old one may exist
  EXPECT_EQ(closed(out), std::vector<std::string>{name});
  out.clear();
  s.prepare(out, "SELECT 1");
  EXPECT_TRUE(out.empty()); // closed once
}

TEST(pgwire_server_statements, forgetting_all_closes_every_name_once) {
  server_statements s;
  std::string out;
  std::string a{s.prepare(out, "A").name};
  std::string b{s.prepare(out, "B").name};
  s.forget_all();
  EXPECT_EQ(s.size(), 0u);
  EXPECT_TRUE(s.prepare(out, "A").parse);
  auto names = closed(out);
  std::sort(names.begin(), names.end());
  std::vector<std::string> both{a, b};
  std::sort(both.begin(), both.end());
  EXPECT_EQ(names, both);
}

TEST(pgwire_server_statements, a_named_execute_binds_without_parsing_when_prepared) {
  std::string out;
  qf::pgwire::extended_messages(out, "SELECT $1", {std::string("7")}, {}, {}, false,
                                {"qf_s9", false});
  qf::pgwire::frame f;
  auto d = qf::pgwire::next_frame(out, false, 1 << 20, f);
  ASSERT_EQ(d.status, qf::pgwire::decode_status::ok);
  auto m = qf::pgwire::parse_message(f);
  ASSERT_TRUE(m);
  auto* b = std::get_if<qf::pgwire::bind>(&*m);
  ASSERT_TRUE(b) << "the batch starts with Bind, tag " << f.tag;
  EXPECT_EQ(b->statement, "qf_s9");

  out.clear();
  qf::pgwire::extended_messages(out, "SELECT $1", {std::string("7")}, {}, {}, false,
                                {"qf_s9", true});
  d = qf::pgwire::next_frame(out, false, 1 << 20, f);
  ASSERT_EQ(d.status, qf::pgwire::decode_status::ok);
  m = qf::pgwire::parse_message(f);
  ASSERT_TRUE(m);
  auto* p = std::get_if<qf::pgwire::parse>(&*m);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->statement, "qf_s9");
  EXPECT_EQ(p->sql, "SELECT $1");
}
