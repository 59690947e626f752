// Splitting scripts into statements, in PostgreSQL's dialect and MySQL's.
#include "protocols/sql/statements.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using qf::sql::split_mysql_statements;

namespace {

std::vector<std::string> mysql_split(std::string_view script) {
  std::vector<std::string_view> views;
  split_mysql_statements(script, views);
  return {views.begin(), views.end()};
}

} // namespace

TEST(split_mysql_statements, splits_at_top_level_semicolons_and_drops_empty_ones) {
  EXPECT_EQ(mysql_split("SELECT 1; SELECT 2;;  ; "),
            (std::vector<std::string>{"SELECT 1", " SELECT 2"}));
  EXPECT_EQ(mysql_split("SELECT 1"), (std::vector<std::string>{"SELECT 1"}));
  EXPECT_TRUE(mysql_split(" ; -- nothing\n").empty());
}

TEST(split_mysql_statements, semicolons_in_strings_identifiers_and_comments_do_not_split) {
  EXPECT_EQ(mysql_split(R"(SELECT 'a\';b', "c;d", `e;f`, 'g'';h'; SELECT 2)"),
            (std::vector<std::string>{R"(SELECT 'a\';b', "c;d", `e;f`, 'g'';h')", " SELECT 2"}));
  EXPECT_EQ(mysql_split("SELECT 1 # one; not two\n; /* ; */ SELECT 2 -- ;\n"),
            (std::vector<std::string>{"SELECT 1 # one; not two\n", " /* ; */ SELECT 2 -- ;\n"}));
  // "--" without a space after it is two minus signs, and `$` quotes nothing.
  EXPECT_EQ(mysql_split("SELECT 1--1; SELECT $a$;$a$"),
            (std::vector<std::string>{"SELECT 1--1", " SELECT $a$", "$a$"}));
  // A backslash escapes nothing in a backtick identifier.
  EXPECT_EQ(mysql_split(R"(SELECT `a\`; SELECT 2)"),
            (std::vector<std::string>{R"(SELECT `a\`)", " SELECT 2"}));
}

TEST(split_mysql_statements, a_routine_definition_keeps_the_semicolons_of_its_body) {
  auto proc = "CREATE DEFINER = `qf`@`%` PROCEDURE p() BEGIN SELECT 1; SELECT 2; END";
  EXPECT_EQ(mysql_split(std::string{"DROP PROCEDURE IF EXISTS p; "} + proc),
            (std::vector<std::string>{"DROP PROCEDURE IF EXISTS p", std::string{" "} + proc}));
  auto trigger = "# audit\nCREATE TRIGGER t BEFORE INSERT ON x FOR EACH ROW BEGIN SET @a = 1; END";
  EXPECT_EQ(mysql_split(trigger), (std::vector<std::string>{trigger}));
  EXPECT_EQ(mysql_split("CREATE TABLE t (a int); CREATE TABLE u (b int)").size(), 2u);
}

TEST(split_mysql_statements, unterminated_quotes_and_comments_end_with_the_script) {
  EXPECT_EQ(mysql_split("SELECT 'a;b"), (std::vector<std::string>{"SELECT 'a;b"}));
  EXPECT_EQ(mysql_split("SELECT 1 /* ;"), (std::vector<std::string>{"SELECT 1 /* ;"}));
  EXPECT_EQ(mysql_split("SELECT '\\"), (std::vector<std::string>{"SELECT '\\"}));
  EXPECT_TRUE(mysql_split("").empty());
}

TEST(replace_mysql_call, calls_without_arguments_are_replaced_outside_strings_and_comments) {
  using qf::sql::replace_mysql_call;
  EXPECT_EQ(replace_mysql_call("INSERT INTO c VALUES (LAST_INSERT_ID(), 'last_insert_id()')", "last_insert_id", "42"),
            "INSERT INTO c VALUES (42, 'last_insert_id()')");
  EXPECT_EQ(replace_mysql_call("SELECT last_insert_id ( ) + 1 -- LAST_INSERT_ID()\n", "last_insert_id", "7"),
            "SELECT 7 + 1 -- LAST_INSERT_ID()\n");
  EXPECT_EQ(replace_mysql_call("UPDATE s SET id = LAST_INSERT_ID(id + 1)", "last_insert_id", "7"),
            "UPDATE s SET id = LAST_INSERT_ID(id + 1)") << "with arguments it sets the value: left alone";
  EXPECT_EQ(replace_mysql_call("SELECT my_last_insert_id(), `last_insert_id`()", "last_insert_id", "7"),
            "SELECT my_last_insert_id(), `last_insert_id`()");
  EXPECT_EQ(replace_mysql_call("SELECT LAST_INSERT_ID(", "last_insert_id", "7"), "SELECT LAST_INSERT_ID(");
}

TEST(sql_statements, only_built_ins_that_compute_a_value_are_pure) {
  using qf::sql::calls_only_pure_functions;
  for (const char* pure : {
         "SELECT abalance FROM pgbench_accounts WHERE aid = 5",
         "SELECT count(*) FROM t WHERE id IN (1, 2, 3)",
         "SELECT COALESCE(MAX (x), 0)::numeric(10,2) AS m FROM t",
         "SELECT x FROM t WHERE EXISTS (SELECT 1 FROM u WHERE (u.a, u.b) = (t.a, 2))",
         "SELECT 'nextval(' AS s, lower(name) FROM t WHERE x = $1",
         "SELECT CAST(x AS varchar(20)) FROM t"})
    EXPECT_TRUE(calls_only_pure_functions(pure)) << pure;
  for (const char* effect : {
         "SELECT nextval('s')",
         "SELECT x FROM t WHERE y IN (SELECT setval('s', 1))",
         "SELECT my_function(1)",
         "SELECT pg_catalog.count(*) FROM t",  // a schema's own, perhaps
         "SELECT \"count\"(x) FROM t",
         "SELECT public.lower(name) FROM t",
         "SELECT set_config('search_path', 'x', false)",
         "SELECT E'\\'', nextval('s')",        // where the E'' string ends
         "SELECT $$x$$, pg_advisory_lock(1)",
         "SELECT 1 AS \"it's\", nextval('s')", // a quote inside a quoted name
         "SELECT 1 AS \"a--b\", nextval('s')",
         "SELECT name FROM t WHERE name = $$O'Brien$$ AND log_visit(id)",
         "SELECT /* /* */ ' */ nextval('s')",    // nested comments
         "SELECT nextval/**/('s')",
         "SELECT count(*) FROM t -- or nextval(",
         "SELECT app . format(x) FROM t",       // a schema's, spaced
         "SELECT audit$count(x) FROM t",
         "SELECT filter(x) FROM t",             // a keyword that may name a function
         "SELECT row_number() OVER (ORDER BY b) FROM t"})
    EXPECT_FALSE(calls_only_pure_functions(effect)) << effect;
}

TEST(sql_statements, row_locks_are_seen_in_any_spelling) {
  using qf::sql::may_lock_rows;
  for (const char* locks : {"SELECT * FROM t FOR UPDATE", "select * from t for  no key update nowait",
                            "SELECT * FROM t FOR SHARE SKIP LOCKED", "SELECT x FROM t\nFOR KEY SHARE"})
    EXPECT_TRUE(may_lock_rows(locks)) << locks;
  for (const char* reads : {"SELECT * FROM t", "SELECT forecast FROM weather WHERE id = 1"})
    EXPECT_FALSE(may_lock_rows(reads)) << reads;
}
