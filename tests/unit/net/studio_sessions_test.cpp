#include "net/boundary/studio_sessions.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace qf::boundary {

namespace {

config::admin_api credentials(std::string user = "ops", std::string password = "hunter22") {
  config::admin_api c;
  c.username = std::move(user);
  c.password = std::move(password);
  return c;
}

/// The Cookie header a browser sends back for a Set-Cookie value.
std::string cookie_for(const std::string& set_cookie) {
  return "theme=dark; " + set_cookie.substr(0, set_cookie.find(';')) + "; other=1";
}

} // namespace

class studio_sessions_test : public ::testing::Test {
protected:
  int64_t now = 1'000'000;
  studio_sessions sessions{credentials(), "key", false, [this] { return now; }};
};

TEST_F(studio_sessions_test, only_the_admin_credentials_log_in) {
  EXPECT_TRUE(sessions.login("ops", "hunter22"));
  EXPECT_FALSE(sessions.login("ops", "hunter2"));
  EXPECT_FALSE(sessions.login("admin", "hunter22"));
  EXPECT_FALSE(sessions.login("", ""));
}

TEST_F(studio_sessions_test, the_cookie_opens_the_session_until_it_expires) {
  auto s = sessions.login("ops", "hunter22");
  ASSERT_TRUE(s);
  auto cookie = cookie_for(sessions.set_cookie(*s));
  auto back = sessions.check(cookie);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->user, "ops");
  EXPECT_EQ(back->id, s->id);
  now += std::chrono::seconds(studio_sessions::lifetime).count() - 1;
  EXPECT_TRUE(sessions.check(cookie));
  now += 1;
  EXPECT_FALSE(sessions.check(cookie));
}

TEST_F(studio_sessions_test, a_logged_out_session_stays_closed) {
  auto s = sessions.login("ops", "hunter22");
  auto cookie = cookie_for(sessions.set_cookie(*s));
  auto other = cookie_for(sessions.set_cookie(*sessions.login("ops", "hunter22")));
  sessions.logout(*s);
  EXPECT_FALSE(sessions.check(cookie));
  EXPECT_TRUE(sessions.check(other));
}

TEST_F(studio_sessions_test, another_node_with_the_key_accepts_a_session_and_new_credentials_do_not) {
  auto cookie = cookie_for(sessions.set_cookie(*sessions.login("ops", "hunter22")));
  studio_sessions replica{credentials(), "key", false, [this] { return now; }};
  EXPECT_TRUE(replica.check(cookie));
  studio_sessions other_key{credentials(), "another key", false, [this] { return now; }};
  EXPECT_FALSE(other_key.check(cookie));
  studio_sessions new_password{credentials("ops", "changed!"), "key", false,
                               [this] { return now; }};
  EXPECT_FALSE(new_password.check(cookie));
}

TEST_F(studio_sessions_test, the_cookie_is_http_only_and_same_site_strict) {
  auto set = sessions.set_cookie(*sessions.login("ops", "hunter22"));
  EXPECT_EQ(set.rfind("qf_studio=", 0), 0u);
  EXPECT_NE(set.find("; HttpOnly"), std::string::npos);
  EXPECT_NE(set.find("; SameSite=Strict"), std::string::npos);
  EXPECT_NE(set.find("; Path=/"), std::string::npos);
  EXPECT_EQ(set.find("Secure"), std::string::npos);
  studio_sessions tls{credentials(), "key", true};
  EXPECT_NE(tls.set_cookie(*tls.login("ops", "hunter22")).find("; Secure"), std::string::npos);
  EXPECT_NE(sessions.clear_cookie().find("Max-Age=0"), std::string::npos);
}

TEST_F(studio_sessions_test, cookies_without_ours_or_with_garbage_open_nothing) {
  for (std::string header : std::vector<std::string>{"", "qf_studio=", "qf_studio", "a=b", "qf_studio=x.y.z",
                             "qf_studio_other=1", ";;;=;", std::string(10000, ';')})
    EXPECT_FALSE(sessions.check(header)) << header;
}

TEST_F(studio_sessions_test, a_cookie_of_the_name_set_by_another_page_does_not_hide_the_session) {
  auto set = sessions.set_cookie(*sessions.login("ops", "hunter22"));
  auto ours = set.substr(0, set.find(';'));
  EXPECT_TRUE(sessions.check("qf_studio=planted; " + ours));
  EXPECT_TRUE(sessions.check(ours + "; qf_studio=planted"));
}

TEST(cookie_value, finds_a_cookie_among_others) {
  EXPECT_EQ(cookie_value("a=1; qf_studio=tok; b=2", "qf_studio"), "tok");
  EXPECT_EQ(cookie_value("qf_studio=tok", "qf_studio"), "tok");
  EXPECT_EQ(cookie_value(" qf_studio = tok ", "qf_studio"), "tok");
  EXPECT_EQ(cookie_value("xqf_studio=tok", "qf_studio"), "");
  EXPECT_EQ(cookie_value("a=1", "qf_studio"), "");
}

TEST(studio_sessions, knows_the_default_credentials) {
  EXPECT_TRUE(studio_sessions(credentials("admin", "admin"), "k", false).default_credentials());
  EXPECT_FALSE(studio_sessions(credentials("admin", "other"), "k", false).default_credentials());
}

} // namespace qf::boundary
