// The parameterized digest per dialect, the masking of free text, and a
// property run: a literal never survives masking, whatever surrounds it.
#include "protocols/sql/literals.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace {

using qf::sql::dialect;
using qf::sql::masked_text;
using qf::sql::parameterized;

TEST(SqlLiterals, EqualQueriesWithOtherValuesShareOneDigest) {
  auto a = parameterized("SELECT * FROM t WHERE id = 42 AND name = 'bob'", dialect::trino);
  auto b = parameterized("select * from t where id = 7 and name = 'alice'", dialect::trino);
  EXPECT_EQ(a, "SELECT * FROM t WHERE id = ? AND name = ?");
  // Case is kept: keywords and names are not told apart without a parser.
  EXPECT_EQ(b, "select * from t where id = ? and name = ?");
  EXPECT_EQ(parameterized("SELECT  1,\n\t2.5e3 ,  .5 -- the end", dialect::trino),
            "SELECT ?, ? , ?");
}

TEST(SqlLiterals, NamesThatHoldDigitsStay) {
  EXPECT_EQ(parameterized("SELECT c1, t2.x3 FROM s4.t2", dialect::postgres),
            "SELECT c1, t2.x3 FROM s4.t2");
  EXPECT_EQ(parameterized("SELECT * FROM 1st_table", dialect::mysql), "SELECT * FROM 1st_table");
}

TEST(SqlLiterals, PostgresStrings) {
  EXPECT_EQ(parameterized("SELECT 'it''s', E'a\\'b', 'c\\', 1", dialect::postgres),
            "SELECT ?, ?, ?, ?");
  EXPECT_EQ(parameterized("SELECT $$a 'b' $$, $fn$ x $$ y $fn$, 3", dialect::postgres),
            "SELECT ?, ?, ?");
  EXPECT_EQ(parameterized("SELECT $1::int, $12 + 4", dialect::postgres), "SELECT $1::int, $12 + ?");
  EXPECT_EQ(parameterized("SELECT B'1010', X'ff', U&'d\\0061t', \"Mixed\"\"Name\"",
                          dialect::postgres),
            "SELECT ?, ?, ?, \"Mixed\"\"Name\"");
  EXPECT_EQ(parameterized("SELECT /* a /* nested 'x' */ still */ 5", dialect::postgres),
            "SELECT ?");
  EXPECT_EQ(parameterized("SELECT 0x1F, 1_000_000", dialect::postgres), "SELECT ?, ?");
}

TEST(SqlLiterals, MysqlStrings) {
  EXPECT_EQ(parameterized("SELECT 'a\\'b', \"c\\\"d\", 'e''f', `col``x`", dialect::mysql),
            "SELECT ?, ?, ?, `col``x`");
  EXPECT_EQ(parameterized("SELECT 1 # comment 'x'\n, 2 -- c\n, 3--4", dialect::mysql),
            "SELECT ? , ? , ?- -?"); // 3 - -4: apart, so no comment the next time
  EXPECT_EQ(parameterized("SELECT X'4D', b'01', N'text', 0xFF, _utf8mb4'z'", dialect::mysql),
            "SELECT ?, ?, ?, ?, _utf8mb4?");
  // "$" neither quotes nor numbers anything in MySQL.
  EXPECT_EQ(parameterized("SELECT $$ 'a' $$", dialect::mysql), "SELECT $$ ? $$");
}

TEST(SqlLiterals, TrinoStrings) {
  EXPECT_EQ(parameterized("SELECT 'a''b', X'65683F', DATE '2001-08-22', \"x\"\"y\"",
                          dialect::trino),
            "SELECT ?, ?, DATE ?, \"x\"\"y\"");
  // Backslashes escape nothing in Trino: 'a\' ends the string.
  EXPECT_EQ(parameterized("SELECT 'a\\', 'secret'", dialect::trino), "SELECT ?, ?");
}

TEST(SqlLiterals, UnterminatedTextRunsToTheEnd) {
  EXPECT_EQ(parameterized("SELECT 'never closed secret", dialect::trino), "SELECT ?");
  EXPECT_EQ(parameterized("SELECT $q$ secret", dialect::postgres), "SELECT ?");
  EXPECT_EQ(parameterized("SELECT 1 /* secret", dialect::postgres), "SELECT ?");
}

TEST(SqlLiterals, FreeTextLosesQuotedValuesAndNumbers) {
  EXPECT_EQ(masked_text("invalid input syntax for type integer: \"42x\""),
            "invalid input syntax for type integer: ?");
  EXPECT_EQ(masked_text("line 1:8: Column 'secret' cannot be resolved"),
            "line ?:?: Column ? cannot be resolved");
  EXPECT_EQ(masked_text("Duplicate entry '17-bob' for key 'PRIMARY' (errno 1062, 42P01)"),
            "Duplicate entry ? for key ? (errno ?, 42P01)");
  EXPECT_EQ(masked_text("utf8 välue 'ä' and x2"), "utf8 välue ? and x2");
}

TEST(SqlLiterals, FingerprintsAreStableAndNeverZero) {
  EXPECT_EQ(qf::sql::fingerprint("SELECT ?"), qf::sql::fingerprint("SELECT ?"));
  EXPECT_NE(qf::sql::fingerprint("SELECT ?"), qf::sql::fingerprint("SELECT ? "));
  EXPECT_NE(qf::sql::fingerprint(""), 0);
}

// Random statements around a secret literal in each dialect's own ways of
// writing one: the digest never holds the secret, and masking again
// changes nothing.
TEST(SqlLiterals, PropertyNoLiteralSurvives) {
  const std::string secret = "S3CR3T";
  struct form {
    dialect d;
    std::vector<std::string> literals;
  };
  const std::vector<form> forms{
    {dialect::postgres,
     {"'" + secret + "'", "'a''" + secret + "'", "E'\\'" + secret + "'", "$$" + secret + "$$",
      "$t$ $$ " + secret + "$t$", "U&'" + secret + "'", "X'" + secret + "'"}},
    {dialect::mysql,
     {"'" + secret + "'", "\"" + secret + "\"", "'\\'" + secret + "'", "\"\\\"" + secret + "\"",
      "x'" + secret + "'", "N'" + secret + "'"}},
    {dialect::trino, {"'" + secret + "'", "'it''s " + secret + "'", "X'" + secret + "'"}},
  };
  const std::vector<std::string> around{"SELECT ", " , ", " = ", "(", ")", " -- c\n", "/* c */",
                                        "\n", " t1.c2 ", "\"q\"", "`b`", " 12 ", " + ", "::"};
  std::mt19937 rng{12345};
  for (const auto& f : forms)
    for (int round = 0; round < 2000; ++round) {
      std::string sql;
      for (int part = 0; part < 6; ++part) {
        sql += around[rng() % around.size()];
        if (rng() % 2)
          sql += f.literals[rng() % f.literals.size()];
      }
      if (f.d != dialect::mysql && sql.find('`') != std::string::npos)
        continue; // a backtick is no quote outside MySQL: not a literal's edge
      auto digest = parameterized(sql, f.d);
      ASSERT_EQ(digest.find(secret), std::string::npos) << sql << " -> " << digest;
      ASSERT_EQ(parameterized(digest, f.d), digest) << sql;
      auto text = masked_text(sql);
      if (sql.find('$') == std::string::npos && sql.find('\\') == std::string::npos) {
        ASSERT_EQ(text.find(secret), std::string::npos) << sql << " -> " << text;
      }
    }
}

} // namespace
