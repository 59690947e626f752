// The settings a client SET, kept by the gateway and replayed on the
// pooled connections its statements get.
#include "protocols/sql/session_settings.hpp"

#include <gtest/gtest.h>

using namespace qf::sql;

TEST(sql_session_settings, replayable_statements_name_their_setting) {
  EXPECT_EQ(replayable_setting("SET search_path = app, public"), "search_path");
  EXPECT_EQ(replayable_setting("set Search_Path to app"), "search_path");
  EXPECT_EQ(replayable_setting("SET search_path=app"), "search_path");
  EXPECT_EQ(replayable_setting("SET SESSION statement_timeout = 5"), "statement_timeout");
  EXPECT_EQ(replayable_setting("  /* c */ SET app.tenant = 'acme'"), "app.tenant");
  EXPECT_EQ(replayable_setting("SET \"MyApp.X\" = 1"), "MyApp.X");
  EXPECT_EQ(replayable_setting("SET TIME ZONE 'UTC'"), "timezone");
  EXPECT_EQ(replayable_setting("SET ROLE reader"), "role");
  EXPECT_EQ(replayable_setting("SET SCHEMA 'app'"), "search_path");
  EXPECT_EQ(replayable_setting("SET NAMES 'UTF8'"), "client_encoding");
  EXPECT_EQ(replayable_setting("RESET ALL"), "all");
  EXPECT_EQ(replayable_setting("reset role"), "role");
  EXPECT_EQ(replayable_setting("RESET TIME ZONE"), "timezone");
  EXPECT_EQ(replayable_setting("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL "
                               "SERIALIZABLE"),
            "default_transaction_isolation");
  EXPECT_EQ(replayable_setting("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY"),
            "default_transaction_read_only");
  for (auto no : {"SET LOCAL search_path = app", "SET TRANSACTION READ ONLY",
                  "SET SESSION AUTHORIZATION bob", "RESET SESSION AUTHORIZATION",
                  "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY, ISOLATION LEVEL SERIALIZABLE",
                  "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY NOT DEFERRABLE",
                  "SET CONSTRAINTS ALL DEFERRED",
                  "SET @v = 1", "SELECT 1", "SHOW search_path", ""})
    EXPECT_EQ(replayable_setting(no), "") << no;
}

TEST(sql_session_settings, the_prelude_sets_what_differs_and_resets_what_is_missing) {
  session_settings none;
  session_settings client;
  client.apply("SET search_path = app");
  client.apply("SET statement_timeout = 100 -- a comment");
  EXPECT_EQ(client.prelude_from(none), "SET search_path = app\n;\nSET statement_timeout = 100 -- a comment");
  EXPECT_EQ(client.prelude_from(client), "");

  session_settings other;
  other.apply("SET search_path = app");
  other.apply("SET ROLE reader");
  other.apply("SET \"MyApp.X\" = 1");
  EXPECT_EQ(client.prelude_from(other),
            "RESET role\n;\nRESET \"MyApp.X\"\n;\nSET statement_timeout = 100 -- a comment");
  // The role goes back first and comes last, around what needs its rights.
  session_settings admin;
  admin.apply("SET ROLE admin");
  admin.apply("SET log_statement = 'all'");
  EXPECT_EQ(other.prelude_from(admin),
            "RESET role\n;\nRESET log_statement\n;\nSET search_path = app\n;\nSET \"MyApp.X\" = 1"
            "\n;\nSET ROLE reader");
  EXPECT_EQ(none.prelude_from(client), "RESET search_path\n;\nRESET statement_timeout");

  // A later SET replaces, RESET forgets, RESET ALL forgets all; the rest is not kept.
  client.apply("SET search_path TO other");
  client.apply("RESET statement_timeout");
  client.apply("SET LOCAL work_mem = '1MB'");
  EXPECT_EQ(client.prelude_from(none), "SET search_path TO other");
  client.apply("RESET ALL");
  EXPECT_TRUE(client.empty());
  EXPECT_EQ(client, none);
}

TEST(sql_mysql_variables, session_variables_set_to_values_are_replayable) {
  for (auto yes : {"SET time_zone = '+09:00'", "SET SESSION sql_mode='ANSI,NO_ZERO_DATE', max_statement_time = 5",
                   "set @@session.time_zone := 'UTC'", "SET @@wait_timeout = 60", "SET LOCAL net_read_timeout = 90"})
    EXPECT_TRUE(mysql_variables::replayable(yes)) << yes;
  for (auto no : {"SET @v = 1", "SET time_zone = @tz", "SET sql_mode = CONCAT(@@sql_mode, ',ANSI')",
                  "SET GLOBAL time_zone = 'UTC'", "SET @@global.time_zone = 'UTC'", "SET NAMES utf8mb4",
                  "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", "SET time_zone = 'UTC', @v = 1",
                  "SELECT 1", "SET", "SET x ="})
    EXPECT_FALSE(mysql_variables::replayable(no)) << no;
}

TEST(sql_mysql_variables, one_set_replays_what_differs_and_defaults_what_is_missing) {
  mysql_variables none;
  mysql_variables client;
  client.apply("SET time_zone = '+09:00', SESSION sql_mode = 'ANSI,NO_ZERO_DATE'");
  EXPECT_EQ(client.prelude_from(none), "SET time_zone = '+09:00', sql_mode = 'ANSI,NO_ZERO_DATE'");
  EXPECT_EQ(client.prelude_from(client), "");
  mysql_variables other;
  other.apply("SET @@session.time_zone = '+09:00'");
  other.apply("SET max_statement_time = 5;");
  EXPECT_EQ(client.prelude_from(other),
            "SET max_statement_time = DEFAULT, sql_mode = 'ANSI,NO_ZERO_DATE'");
  client.apply("SET TIME_ZONE = 'UTC'"); // replaces, in place
  EXPECT_EQ(client.prelude_from(none), "SET time_zone = 'UTC', sql_mode = 'ANSI,NO_ZERO_DATE'");
  client.apply("SET @v = 1"); // not kept
  EXPECT_EQ(client.prelude_from(none), "SET time_zone = 'UTC', sql_mode = 'ANSI,NO_ZERO_DATE'");
}

TEST(sql_mysql_variables, use_names_a_database_quoted_or_not) {
  EXPECT_EQ(mysql_used_database("USE app"), "app");
  EXPECT_EQ(mysql_used_database("use `my``db` ;"), "my`db");
  EXPECT_EQ(mysql_used_database("/* c */ USE `a b`"), "a b");
  for (auto no : {"USE", "USE a b", "USE `a", "USE ``", "SELECT 1", "USER x"})
    EXPECT_FALSE(mysql_used_database(no)) << no;
  EXPECT_EQ(mysql_use("my`db"), "USE `my``db`");
  EXPECT_TRUE(mysql_variables::replayable("USE app"));
}

TEST(sql_mysql_variables, a_database_is_given_first_then_the_variables) {
  mysql_variables conn; // a connection opened in app, with nothing set
  conn.use("app");
  mysql_variables client;
  client.use("reports");
  client.apply("SET time_zone = 'UTC'");
  EXPECT_NE(conn, client);
  EXPECT_EQ(client.prelude_from(conn), "USE `reports`");
  auto after_use = client.after_prelude(conn);
  EXPECT_EQ(after_use.database(), "reports");
  EXPECT_EQ(client.prelude_from(after_use), "SET time_zone = 'UTC'");
  auto after_set = client.after_prelude(after_use);
  EXPECT_EQ(after_set, client) << "two steps, then alike";
  EXPECT_EQ(client.prelude_from(after_set), "");

  client.apply("USE `app`");
  EXPECT_EQ(client.database(), "app");
  EXPECT_EQ(client.prelude_from(after_set), "USE `app`");

  mysql_variables unnamed; // no database: a USE cannot go back to none
  EXPECT_EQ(unnamed.prelude_from(conn), "");
  EXPECT_EQ(unnamed.after_prelude(conn).database(), "app");

  client.discard(); // COM_RESET_CONNECTION keeps the database
  EXPECT_EQ(client.database(), "app");
}

TEST(sql_session_settings, a_startup_packet_gives_settings_that_reset_goes_back_to) {
  auto from_startup = startup_settings({{"user", "alice"},
                                        {"database", "db"},
                                        {"application_name", "psql"},
                                        {"client_encoding", "UTF8"},
                                        {"_pq_.some_extension", "1"},
                                        {"search_path", "qf_even,public"},
                                        {"options", "-c statement_timeout=5s --work_mem=8MB "
                                                    "-c app.note=a\\ b -x ignored"}});
  using pair = std::pair<std::string, std::string>;
  EXPECT_EQ(from_startup, (std::vector<pair>{{"statement_timeout", "5s"},
                                             {"work_mem", "8MB"},
                                             {"app.note", "a b"},
                                             {"search_path", "qf_even,public"}}));
  session_settings s;
  for (const auto& [name, value] : from_startup)
    s.start_with(name, value);
  session_settings none;
  EXPECT_EQ(s.prelude_from(none),
            "SELECT pg_catalog.set_config('statement_timeout', '5s', false)\n;\n"
            "SELECT pg_catalog.set_config('work_mem', '8MB', false)\n;\n"
            "SELECT pg_catalog.set_config('app.note', 'a b', false)\n;\n"
            "SELECT pg_catalog.set_config('search_path', 'qf_even,public', false)");
  auto started = s;
  s.apply("SET search_path = other");
  s.apply("SET statement_timeout = 0");
  s.apply("RESET search_path"); // to the startup value, as PostgreSQL does
  EXPECT_EQ(s.prelude_from(started), "SET statement_timeout = 0");
  auto server = s;
  server.apply_on_server("RESET search_path"); // the connection's own default
  EXPECT_EQ(s.prelude_from(server), "SELECT pg_catalog.set_config('search_path', 'qf_even,public', false)");
  s.apply("RESET ALL");
  EXPECT_EQ(s, started);
  s.apply("SET work_mem = '1MB'");
  s.discard(); // DISCARD ALL
  EXPECT_EQ(s, started);
  session_settings quoted;
  quoted.start_with("app.who", "o'brien");
  EXPECT_EQ(quoted.prelude_from(none), "SELECT pg_catalog.set_config('app.who', 'o''brien', false)");
}
