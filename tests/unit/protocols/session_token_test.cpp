#include "protocols/studio/session_token.hpp"

#include "protocols/common/hmac.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace qf::studio {

namespace {

const signing_key key{"node-key", fingerprint_of("admin", "s3cret")};

session_claims claims(int64_t expires_at = 2000) {
  return {"admin", "0123456789abcdef0123456789abcdef", expires_at};
}

} // namespace

TEST(session_token, a_token_verifies_with_its_key_until_it_expires) {
  auto token = issue(claims(2000), key);
  auto back = verify(token, key, 1999);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->user, "admin");
  EXPECT_EQ(back->id, claims().id);
  EXPECT_EQ(back->expires_at, 2000);
  EXPECT_FALSE(verify(token, key, 2000));
}

TEST(session_token, another_key_or_changed_credentials_refuse_it) {
  auto token = issue(claims(), key);
  EXPECT_FALSE(verify(token, {"other-key", key.credentials}, 1));
  EXPECT_FALSE(verify(token, {key.key, fingerprint_of("admin", "changed")}, 1));
  EXPECT_FALSE(verify(token, {key.key, fingerprint_of("root", "s3cret")}, 1));
}

TEST(session_token, any_change_to_a_token_refuses_it) {
  auto token = issue(claims(), key);
  for (size_t i = 0; i < token.size(); ++i) {
    auto changed = token;
    changed[i] = changed[i] == '1' ? '2' : '1';
    EXPECT_FALSE(verify(changed, key, 1)) << "changed at " << i << ": " << changed;
  }
  EXPECT_FALSE(verify(token + "0", key, 1));
  EXPECT_FALSE(verify(token.substr(0, token.size() - 1), key, 1));
}

TEST(session_token, malformed_tokens_are_refused) {
  for (std::string bad : std::vector<std::string>{"", ".", "...", "1.2.3.4", "abc", std::string(600, 'a')})
    EXPECT_FALSE(verify(bad, key, 1)) << bad;
  // Signed as the node signs, but not what issue() writes: the fields are
  // still read with care.
  auto signed_token = [](const std::string& payload) {
    return payload + "." + hmac_sha256_hex(key.key, payload + "\n" + key.credentials);
  };
  auto id = claims().id;
  ASSERT_TRUE(verify(signed_token("2000." + id + ".61646d696e"), key, 1));
  // Read before `now` could matter: a negative expiry is refused as a
  // field, not as expired.
  EXPECT_FALSE(verify(signed_token("-1." + id + ".61646d696e"), key, -5));
  for (std::string payload : std::vector<std::string>{"2000.short.61646d696e", "x2000." + id + ".61646d696e",
                              "-1." + id + ".61646d696e", "2000." + id + ".616",
                              "2000." + id + ".zz", "2000." + id + ".61646d696e.extra",
                              "99999999999999999999." + id + ".61", "2000." + id})
    EXPECT_FALSE(verify(signed_token(payload), key, 1)) << payload;
}

TEST(session_token, the_user_name_survives_any_bytes) {
  session_claims odd{std::string{"a.b;c=d\0e", 9}, claims().id, 2000};
  auto back = verify(issue(odd, key), key, 1);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->user, odd.user);
}

TEST(session_token, csrf_tokens_differ_per_session_and_key) {
  auto a = claims();
  auto b = claims();
  b.id = "fedcba9876543210fedcba9876543210";
  EXPECT_EQ(csrf_token(a, key), csrf_token(a, key));
  EXPECT_NE(csrf_token(a, key), csrf_token(b, key));
  EXPECT_NE(csrf_token(a, key), csrf_token(a, {"other-key", key.credentials}));
  EXPECT_EQ(csrf_token(a, key).size(), 32u);
}

} // namespace qf::studio
