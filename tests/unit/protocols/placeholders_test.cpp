#include "protocols/sql/placeholders.hpp"
#include "protocols/sql/statements.hpp"

#include <gtest/gtest.h>

namespace qf::sql {
namespace {

std::string numbered(std::string_view sql, placeholder_style style) {
  return replace_placeholders(sql, style,
                              [](size_t n) { return "<" + std::to_string(n) + ">"; });
}

TEST(Placeholders, QuestionMarksAreNumberedByPosition) {
  EXPECT_EQ(numbered("SELECT ? + ?, ?", placeholder_style::question_mark),
            "SELECT <1> + <2>, <3>");
  EXPECT_EQ(count_question_marks("INSERT INTO t VALUES (?, ?)"), 2u);
  EXPECT_EQ(count_question_marks("SELECT 1"), 0u);
}

TEST(Placeholders, QuotesAndCommentsAreLeftAlone) {
  auto sql = "SELECT '?', \"?\", `a?`, 'it\\'s ?', 'x''?' -- ?\n, ? # ?\n/* ? */ ?";
  EXPECT_EQ(numbered(sql, placeholder_style::question_mark),
            "SELECT '?', \"?\", `a?`, 'it\\'s ?', 'x''?' -- ?\n, <1> # ?\n/* ? */ <2>");
}

TEST(Placeholders, DollarPlaceholdersKeepTheirNumbers) {
  EXPECT_EQ(numbered("SELECT $2, '$1', $1, $10x, $", placeholder_style::dollar),
            "SELECT <2>, '$1', <1>, <10>x, $");
  EXPECT_EQ(numbered("SELECT ?", placeholder_style::dollar), "SELECT ?");
}

TEST(Placeholders, DashesWithoutSpaceAreMinusSigns) {
  // MySQL needs whitespace after "--" for a comment: 1--1 is 1 - -1.
  EXPECT_EQ(numbered("SELECT 1--?", placeholder_style::question_mark),
            "SELECT 1--<1>");
}

TEST(Placeholders, UnterminatedRunsEndTheScan) {
  EXPECT_EQ(numbered("SELECT 'abc ?", placeholder_style::question_mark),
            "SELECT 'abc ?");
  EXPECT_EQ(numbered("SELECT /* ?", placeholder_style::question_mark),
            "SELECT /* ?");
}

TEST(Preview, CutsLongSqlOnACharacterBoundary) {
  std::string sql = "SELECT '" + std::string(10, 'x') + "é'";
  EXPECT_EQ(preview(sql, 100), sql);
  EXPECT_EQ(preview(sql, 19), "SELECT '" + std::string(10, 'x')); // inside é
}

} // namespace
} // namespace qf::sql

TEST(Placeholders, TheOnesALimitOrOffsetTakesAreToldApart) {
  using qf::sql::limit_placeholders;
  EXPECT_EQ(limit_placeholders("SELECT $1 FROM t LIMIT $2"), (std::vector<bool>{false, true}));
  EXPECT_EQ(limit_placeholders("SELECT * FROM t limit $3, $1"), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(limit_placeholders("SELECT * FROM t LIMIT\n$1 OFFSET $2"), (std::vector<bool>{true, true}));
  EXPECT_TRUE(limit_placeholders("SELECT my_limit $1 FROM t WHERE a = $2").empty());
  EXPECT_EQ(limit_placeholders("SELECT * FROM t LIMIT 10 OFFSET $1"), std::vector<bool>{true});
  EXPECT_TRUE(limit_placeholders("SELECT * FROM t LIMIT $0").empty()) << "no such placeholder";
  EXPECT_TRUE(limit_placeholders("SELECT * FROM t LIMIT $").empty());
}
