// Statement-level SQL knowledge a gateway needs without a parser: splitting
// a script into statements (quotes, comments and dollar quotes respected),
// and the leading keyword that decides a command tag.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace qf::sql {

/// Splits on top-level semicolons, into views of `script`; empty
/// statements are dropped.
std::vector<std::string_view> split_statements(std::string_view script);
/// The same into `out`, cleared first and its capacity reused.
void split_statements(std::string_view script, std::vector<std::string_view>& out);

/// The same for MySQL's dialect: backticks quote, backslashes escape in
/// strings, `#` and `-- ` start comments, `$` is no quote. A routine,
/// trigger or event definition (whose body has semicolons of its own) is
/// the last statement: the rest of the script is its body.
void split_mysql_statements(std::string_view script, std::vector<std::string_view>& out);

/// Whether `s` calls one of the functions `names` (lowercase; any case,
/// quoted or not, with or without a schema). `in_strings`: also inside
/// string literals (dynamic SQL); never inside comments.
bool calls_function(std::string_view s, std::initializer_list<std::string_view> names,
                    bool in_strings = true);

/// Whether every function `s` calls outside string literals is a built-in
/// one with no effect beyond its value (count, coalesce, lower, now...),
/// unqualified: read by name, so a user's function of the same name is
/// taken for the built-in. Text with a quoted identifier, a comment, a
/// dollar quote or a backslash is not read: false.
bool calls_only_pure_functions(std::string_view s);

/// Whether a SELECT may lock the rows it reads (FOR UPDATE, FOR SHARE,
/// FOR NO KEY UPDATE, FOR KEY SHARE): read by its words, so also when a
/// name merely holds them.
bool may_lock_rows(std::string_view select);

/// `text` between two `quote`s, each of its own doubled: a string literal
/// ('...'), a MySQL identifier (`...`).
std::string quoted(std::string_view text, char quote = '\'');

/// Whether `s` holds `word` (lowercase) in any case.
bool contains_ignoring_case(std::string_view s, std::string_view word);

/// MySQL text with each call of `function` without arguments (`NAME()`,
/// any case, outside strings and comments) replaced by `value`; the text
/// itself when there is none.
std::string replace_mysql_call(std::string_view sql, std::string_view function,
                               std::string_view value);

/// The first keyword, uppercased ("SELECT", "WITH", "INSERT"...), skipping
/// whitespace, comments and opening parentheses.
std::string leading_keyword(std::string_view statement);

/// The first two keywords ("CREATE TABLE", "SET", "BEGIN").
std::string leading_keywords(std::string_view statement, size_t count);

/// What follows the first keyword, past the whitespace and comments on
/// either side of it: "x = 1" of "SET x = 1".
std::string_view after_leading_keyword(std::string_view statement);

/// Whether the script leaves state in the server's session that its
/// client may count on and that no other client may see: a temporary
/// table (view, sequence; also one created in pg_temp), an SQL-level
/// prepared statement, a lock held by the session (GET_LOCK,
/// pg_advisory_lock, LOCK TABLES), a set_config() call, a MySQL HANDLER, a MySQL user
/// variable, a cursor WITH HOLD, MySQL's USE of another database (where
/// the fast lane does not replay it). Read from the text, so a function that
/// does so unseen is not found.
bool leaves_session_state(std::string_view script);

/// Whether the statement changes a setting of the server's session beyond
/// its transaction: SET (not SET LOCAL, SET TRANSACTION) and RESET.
bool changes_session_setting(std::string_view statement);

/// Whether a statement led by this keyword answers with rows. DuckDB
/// answers other statements with one "Count" column, which the wire
/// protocols turn into a command tag or an OK packet.
bool returns_rows(std::string_view leading_keyword);

/// The statement's first max_bytes at most, cut on a UTF-8 character
/// boundary: what history and the admin API show of long SQL.
std::string_view preview(std::string_view statement, size_t max_bytes);

/// The highest $n placeholder outside strings and comments; 0 if none.
size_t highest_placeholder(std::string_view statement);

} // namespace qf::sql
