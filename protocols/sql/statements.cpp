// A small lexer: enough to know where strings, identifiers and comments
// are, so that semicolons and keywords inside them are not mistaken.
#include "protocols/sql/statements.hpp"

#include <algorithm>
#include <cctype>

namespace qf::sql {

namespace {

bool is_space(char c) {
  return std::isspace(static_cast<unsigned char>(c)) != 0;
}

char lower_ascii(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

/// Index just past the quoted run starting at i (quote doubled to escape).
size_t skip_quoted(std::string_view s, size_t i, char quote) {
  for (++i; i < s.size(); ++i)
    if (s[i] == quote) {
      if (i + 1 < s.size() && s[i + 1] == quote)
        ++i;
      else
        return i + 1;
    }
  return s.size();
}

/// Index just past a $tag$...$tag$ run, or i + 1 when s[i] starts none.
size_t skip_dollar(std::string_view s, size_t i) {
  size_t j = i + 1;
  while (j < s.size()
         && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_'))
    ++j;
  if (j >= s.size() || s[j] != '$')
    return i + 1;
  auto tag = s.substr(i, j - i + 1);
  auto end = s.find(tag, j + 1);
  return end == std::string_view::npos ? s.size() : end + tag.size();
}

/// Index past whitespace and comments from i: /* */ and, where
/// `line_comment_at` says one starts, a comment to the end of the line.
template <class LineComment>
size_t skip_comments(std::string_view s, size_t i, LineComment line_comment_at) {
  while (i < s.size()) {
    if (is_space(s[i])) {
      ++i;
    } else if (line_comment_at(s, i)) {
      auto nl = s.find('\n', i);
      i = nl == std::string_view::npos ? s.size() : nl + 1;
    } else if (s.substr(i, 2) == "/*") {
      auto end = s.find("*/", i + 2);
      i = end == std::string_view::npos ? s.size() : end + 2;
    } else {
      break;
    }
  }
  return i;
}

/// Index past whitespace and comments (PostgreSQL's) from i.
size_t skip_noise(std::string_view s, size_t i) {
  return skip_comments(s, i, [](std::string_view t, size_t at) { return t.substr(at, 2) == "--"; });
}

} // namespace

std::vector<std::string_view> split_statements(std::string_view script) {
  std::vector<std::string_view> out;
  split_statements(script, out);
  return out;
}

void split_statements(std::string_view script, std::vector<std::string_view>& out) {
  out.clear();
  size_t start = 0;
  size_t i = 0;
  auto flush = [&](size_t end) {
    auto stmt = script.substr(start, end - start);
    if (skip_noise(stmt, 0) < stmt.size())
      out.push_back(stmt);
  };
  while (i < script.size()) {
    char c = script[i];
    if (c == '\'' || c == '"') {
      i = skip_quoted(script, i, c);
    } else if (c == '$') {
      i = skip_dollar(script, i);
    } else if (script.substr(i, 2) == "--" || script.substr(i, 2) == "/*") {
      i = skip_noise(script, i);
    } else if (c == ';') {
      flush(i);
      start = ++i;
    } else {
      ++i;
    }
  }
  flush(script.size());
}

namespace {

/// Index just past MySQL's quoted run from i: a backslash escapes the next
/// character in strings, not in `identifiers`; a doubled quote escapes it.
size_t skip_mysql_quoted(std::string_view s, size_t i, char quote) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\' && quote != '`')
      ++i;
    else if (s[i] == quote && i + 1 < s.size() && s[i + 1] == quote)
      ++i;
    else if (s[i] == quote)
      return i + 1;
  }
  return s.size();
}

/// MySQL's "--" starts a comment only when whitespace (or the end) follows.
bool mysql_line_comment_at(std::string_view s, size_t i) {
  if (s[i] == '#')
    return true;
  return s.substr(i, 2) == "--" && (i + 2 == s.size() || is_space(s[i + 2]));
}

/// Index past whitespace and MySQL's comments from i.
size_t skip_mysql_noise(std::string_view s, size_t i) {
  return skip_comments(s, i, mysql_line_comment_at);
}

/// CREATE [OR REPLACE] [DEFINER = ...] [AGGREGATE] PROCEDURE | FUNCTION |
/// TRIGGER | EVENT: its body may hold semicolons.
bool defines_routine(std::string_view statement) {
  statement.remove_prefix(skip_mysql_noise(statement, 0)); // a # comment too
  if (leading_keyword(statement) != "CREATE")
    return false;
  auto rest = after_leading_keyword(statement);
  for (int words = 0; words < 8 && !rest.empty(); ++words) {
    auto word = leading_keyword(rest);
    if (word == "PROCEDURE" || word == "FUNCTION" || word == "TRIGGER" || word == "EVENT")
      return true;
    if (word == "TABLE" || word == "VIEW" || word == "INDEX" || word == "DATABASE"
        || word == "SCHEMA" || word == "USER" || word == "TEMPORARY" || word == "UNIQUE")
      return false;
    // DEFINER = `u`@`h`, OR REPLACE, AGGREGATE, SQL SECURITY ...: skip a token
    size_t i = 0;
    while (i < rest.size() && !is_space(rest[i]))
      i = rest[i] == '`' || rest[i] == '\'' || rest[i] == '"'
            ? skip_mysql_quoted(rest, i, rest[i])
            : i + 1;
    rest = rest.substr(skip_noise(rest, i));
  }
  return false;
}

} // namespace

void split_mysql_statements(std::string_view script, std::vector<std::string_view>& out) {
  out.clear();
  size_t start = 0;
  auto flush = [&](size_t end) {
    auto stmt = script.substr(start, end - start);
    if (skip_mysql_noise(stmt, 0) < stmt.size())
      out.push_back(stmt);
  };
  size_t i = 0;
  while (i < script.size()) {
    char c = script[i];
    if (c == '\'' || c == '"' || c == '`') {
      i = skip_mysql_quoted(script, i, c);
    } else if (mysql_line_comment_at(script, i) || script.substr(i, 2) == "/*") {
      i = skip_mysql_noise(script, i);
    } else if (c == ';') {
      if (defines_routine(script.substr(start, i - start)))
        break; // its body goes on past this semicolon
      flush(i);
      start = ++i;
    } else {
      ++i;
    }
  }
  flush(script.size());
}

std::string quoted(std::string_view text, char quote) {
  std::string out(1, quote);
  for (char c : text) {
    out += c;
    if (c == quote)
      out += quote;
  }
  return out + quote;
}

bool contains_ignoring_case(std::string_view s, std::string_view word) {
  for (size_t i = 0; i + word.size() <= s.size(); ++i) {
    size_t k = 0;
    while (k < word.size() && lower_ascii(s[i + k]) == word[k])
      ++k;
    if (k == word.size())
      return true;
  }
  return false;
}

std::string replace_mysql_call(std::string_view sql, std::string_view function,
                               std::string_view value) {
  std::string out;
  size_t copied = 0;
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  size_t i = 0;
  while (i < sql.size()) {
    char c = sql[i];
    if (c == '\'' || c == '"' || c == '`') {
      i = skip_mysql_quoted(sql, i, c);
      continue;
    }
    if (mysql_line_comment_at(sql, i) || sql.substr(i, 2) == "/*") {
      i = skip_mysql_noise(sql, i);
      continue;
    }
    bool word_start = ident(c) && (i == 0 || !ident(sql[i - 1]));
    if (!word_start || i + function.size() > sql.size()
        || !std::equal(function.begin(), function.end(), sql.begin() + static_cast<std::ptrdiff_t>(i),
                       [](char a, char b) { return std::tolower(static_cast<unsigned char>(a))
                                                   == std::tolower(static_cast<unsigned char>(b)); })
        || (i + function.size() < sql.size() && ident(sql[i + function.size()]))) {
      ++i;
      continue;
    }
    size_t j = i + function.size();
    while (j < sql.size() && is_space(sql[j]))
      ++j;
    if (j >= sql.size() || sql[j] != '(') {
      i = j;
      continue;
    }
    ++j;
    while (j < sql.size() && is_space(sql[j]))
      ++j;
    if (j >= sql.size() || sql[j] != ')') { // it takes arguments: another call
      i = j;
      continue;
    }
    out.append(sql.substr(copied, i - copied));
    out.append(value);
    copied = i = j + 1;
  }
  if (copied == 0)
    return std::string{sql};
  out.append(sql.substr(copied));
  return out;
}

std::string leading_keywords(std::string_view statement, size_t count) {
  std::string out;
  size_t i = 0;
  for (size_t n = 0; n < count; ++n) {
    i = skip_noise(statement, i);
    while (i < statement.size() && statement[i] == '(')
      i = skip_noise(statement, i + 1);
    size_t start = i;
    while (i < statement.size()
           && (std::isalpha(static_cast<unsigned char>(statement[i]))
               || statement[i] == '_'))
      ++i;
    if (i == start)
      break;
    if (!out.empty())
      out += ' ';
    for (auto c : statement.substr(start, i - start)) // ASCII: no locale
      out += c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
  }
  return out;
}

namespace {


/// A call of a function that leaves state in the session, not the
/// transaction: MySQL's GET_LOCK, PostgreSQL's session advisory locks, and
/// set_config() (which a SET's replay cannot follow: its name and value
/// may be parameters or computed), in any spelling ("SET_CONFIG (",
/// "pg_catalog.set_config(", quoted), in a DO block or a CTE alike.
bool calls_session_function(std::string_view s) {
  return calls_function(s, {"get_lock", "pg_advisory_lock", "pg_advisory_lock_shared",
                            "pg_try_advisory_lock", "pg_try_advisory_lock_shared", "set_config"});
}

/// INTO, then (past spaces and comments) a user variable: SELECT ... INTO @v.
bool into_user_variable(std::string_view s) {
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = 0; at + 4 < s.size(); ++at) {
    if ((at > 0 && ident(s[at - 1])) || !contains_ignoring_case(s.substr(at, 4), "into"))
      continue;
    auto rest = skip_noise(s, at + 4);
    if (rest < s.size() && s[rest] == '@')
      return true;
  }
  return false;
}

/// MySQL's user variables (@v; @@v is a system variable), set by SET,
/// := , SELECT ... INTO @v, a procedure's OUT parameter (CALL p(@v)) or
/// a statement EXECUTE runs.
bool assigns_user_variable(std::string_view s) {
  bool user_variable = false;
  for (auto at = s.find('@'); at != std::string_view::npos && !user_variable;
       at = s.find('@', at + 1)) {
    bool system = (at + 1 < s.size() && s[at + 1] == '@') || (at > 0 && s[at - 1] == '@');
    user_variable = !system;
  }
  if (!user_variable)
    return false;
  auto first = leading_keyword(s);
  return first == "SET" || first == "CALL" || first == "EXECUTE"
         || s.find(":=") != std::string_view::npos || into_user_variable(s);
}

/// `word` (lowercase) in `s`, not inside a longer name.
bool has_word(std::string_view s, std::string_view word) {
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t i = 0; i + word.size() <= s.size(); ++i)
    if (contains_ignoring_case(s.substr(i, word.size()), word) && (i == 0 || !ident(s[i - 1]))
        && (i + word.size() == s.size() || !ident(s[i + word.size()])))
      return true;
  return false;
}

/// A PL/pgSQL statement that starts with SET or RESET (after `;`, BEGIN,
/// THEN, ELSE or LOOP), or dynamic SQL that does ('SET ...', format('SET
/// ...')); not UPDATE's SET, which follows a table's name.
bool sets_in_a_block(std::string_view s) {
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (std::string_view word : {"set", "reset"}) {
    for (size_t i = 0; i + word.size() <= s.size(); ++i) {
      if (!contains_ignoring_case(s.substr(i, word.size()), word) || (i > 0 && ident(s[i - 1]))
          || (i + word.size() < s.size() && ident(s[i + word.size()])))
        continue;
      size_t before = i;
      while (before > 0 && is_space(s[before - 1]))
        --before;
      if (before == 0 || s[before - 1] == ';' || s[before - 1] == '\'' || s[before - 1] == '$')
        return true;
      size_t word_start = before;
      while (word_start > 0 && ident(s[word_start - 1]))
        --word_start;
      auto previous = s.substr(word_start, before - word_start);
      for (std::string_view opener : {"begin", "then", "else", "loop"})
        if (previous.size() == opener.size() && contains_ignoring_case(previous, opener))
          return true;
    }
  }
  return false;
}

bool statement_leaves_state(std::string_view statement) {
  auto words = leading_keywords(statement, 5);
  auto starts = [&](std::string_view w) { return words.rfind(w, 0) == 0; };
  // A DO block's SET (or EXECUTE 'set ...') and temporary tables are its
  // session's as anyone's.
  if (words == "DO" || starts("DO "))
    return sets_in_a_block(statement) || has_word(statement, "temp")
           || has_word(statement, "temporary");
  if (starts("CREATE ") && contains_ignoring_case(statement, "pg_temp"))
    return true; // CREATE TABLE pg_temp.t: temporary without the word
  if (starts("CREATE ")) { // [OR REPLACE] [GLOBAL|LOCAL] TEMP[ORARY]
    for (auto temp : {"CREATE TEMP", "CREATE TEMPORARY", "CREATE GLOBAL TEMP", "CREATE LOCAL TEMP",
                      "CREATE OR REPLACE TEMP", "CREATE GLOBAL TEMPORARY", "CREATE LOCAL TEMPORARY",
                      "CREATE OR REPLACE TEMPORARY"})
      if (words == temp || starts(std::string{temp} + ' '))
        return true;
    return false;
  }
  if (starts("SELECT") || starts("WITH"))
    return contains_ignoring_case(statement, "into temp");
  if (starts("FLUSH ")) // FLUSH TABLES [t] WITH READ LOCK, FOR EXPORT: until UNLOCK TABLES
    return contains_ignoring_case(statement, "lock") || contains_ignoring_case(statement, "for export");
  return words == "PREPARE" || starts("PREPARE ") || starts("LOCK TABLE") || starts("BACKUP LOCK")
         || words == "USE"
         || starts("USE ") || starts("HANDLER ") || (starts("DECLARE ") && contains_ignoring_case(statement, "with hold"));
}

} // namespace

namespace {

/// What stands before a `(` of a statement: a function's name (empty for
/// a bracket of an expression), quoted, or after a schema.
struct call {
  std::string_view name;
  bool quoted = false;
  bool qualified = false;
};

/// Calls `found` with each `(` outside comments (and outside string
/// literals unless `in_strings`) until it returns true; whether it did.
template <class Found>
bool any_call(std::string_view s, bool in_strings, Found found) {
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '\'' && !in_strings) {
      i = skip_quoted(s, i, c) - 1;
      continue;
    }
    if (s.substr(i, 2) == "--" || s.substr(i, 2) == "/*") {
      i = skip_noise(s, i) - 1;
      continue;
    }
    if (c != '(')
      continue;
    size_t end = i;
    while (end > 0 && is_space(s[end - 1]))
      --end;
    size_t start = end;
    call at;
    if (end >= 2 && s[end - 1] == '"') { // "set_config"(
      auto quote = s.rfind('"', end - 2);
      if (quote == std::string_view::npos)
        continue;
      start = quote + 1;
      --end;
      at.quoted = true;
    } else {
      while (start > 0 && (std::isalnum(static_cast<unsigned char>(s[start - 1])) || s[start - 1] == '_'))
        --start;
    }
    at.name = s.substr(start, end - start);
    size_t before = at.quoted ? start - 1 : start; // its opening quote
    at.qualified = before > 0 && s[before - 1] == '.';
    if (found(at))
      return true;
  }
  return false;
}

template <class Names>
bool named_one_of(std::string_view name, const Names& names) {
  for (std::string_view fn : names)
    if (name.size() == fn.size() && contains_ignoring_case(name, fn))
      return true;
  return false;
}

} // namespace

bool calls_function(std::string_view s, std::initializer_list<std::string_view> names,
                    bool in_strings) {
  if (s.find('(') == std::string_view::npos) // most statements: one look
    return false;
  return any_call(s, in_strings, [&](const call& c) { return named_one_of(c.name, names); });
}

bool calls_only_pure_functions(std::string_view s) {
  if (s.find('(') == std::string_view::npos)
    return true;
  // Only text any_call() reads exactly: no quoted identifier (a quote or a
  // comment start may hide inside), no comment (PostgreSQL nests them), no
  // dollar quote (a `$` but a placeholder's), no backslash (an E'' string
  // may end elsewhere than skip_quoted() thinks).
  if (s.find('"') != std::string_view::npos || s.find("/*") != std::string_view::npos
      || s.find("--") != std::string_view::npos || s.find('\\') != std::string_view::npos)
    return false;
  for (auto dollar = s.find('$'); dollar != std::string_view::npos; dollar = s.find('$', dollar + 1))
    if (dollar + 1 >= s.size() || !std::isdigit(static_cast<unsigned char>(s[dollar + 1])))
      return false;
  // Words a bracket follows that call nothing and cannot name a function
  // (PostgreSQL's reserved keywords and those that cannot be functions).
  static constexpr std::string_view words[] = {
    "in", "exists", "any", "all", "some", "values", "array", "row", "as", "from", "on", "where",
    "and", "or", "not", "select", "using", "lateral", "having", "when", "then", "else", "case",
    "distinct", "union", "intersect", "except", "with", "limit", "offset", "between", "cast",
    "extract", "numeric", "decimal", "varchar", "char", "character", "bit", "time", "timestamp",
    "interval", "float"};
  // Built-in functions with no effect beyond their value.
  static constexpr std::string_view pure[] = {
    "count", "sum", "avg", "min", "max", "coalesce", "nullif", "greatest", "least", "lower",
    "upper", "length", "char_length", "octet_length", "substring", "substr", "trim", "btrim",
    "ltrim", "rtrim", "concat", "concat_ws", "replace", "position", "strpos", "split_part", "left",
    "right", "lpad", "rpad", "starts_with", "md5", "abs", "round", "floor", "ceil", "ceiling",
    "trunc", "mod", "power", "sqrt", "sign", "now", "date_trunc", "date_part", "age", "to_char",
    "to_date", "to_timestamp", "to_number", "make_date", "array_agg", "string_agg", "json_agg",
    "jsonb_agg", "json_build_object", "jsonb_build_object", "json_build_array",
    "jsonb_build_array", "to_json", "to_jsonb", "jsonb_array_length", "json_array_length",
    "array_length", "array_to_string", "string_to_array", "unnest", "cardinality",
    "generate_series", "bool_and", "bool_or", "stddev", "variance"};
  return !any_call(s, false, [&](const call& c) {
    if (c.name.empty())
      return false; // a bracket of an expression
    size_t start = static_cast<size_t>(c.name.data() - s.data());
    // What stands before the name, past spaces: a schema's dot (`app . f`)
    // or a byte the name scan stops at but an identifier may hold.
    size_t before = start;
    while (before > 0 && is_space(s[before - 1]))
      --before;
    if (before > 0) {
      auto b = static_cast<unsigned char>(s[before - 1]);
      if (b == '.' || b >= 0x80 || (before == start && b == '$'))
        return true;
    }
    return !named_one_of(c.name, words) && !named_one_of(c.name, pure);
  });
}

bool may_lock_rows(std::string_view select) {
  return contains_ignoring_case(select, "for")
         && (contains_ignoring_case(select, "update") || contains_ignoring_case(select, "share"));
}

bool leaves_session_state(std::string_view script) {
  if (calls_session_function(script) || assigns_user_variable(script))
    return true;
  auto first = leading_keyword(script);
  bool maybe = first == "CREATE" || first == "PREPARE" || first == "LOCK" || first == "DECLARE"
               || first == "USE" || first == "HANDLER" || first == "FLUSH" || first == "BACKUP"
               || first == "DO"
               || contains_ignoring_case(script, "temp");
  if (!maybe) // most statements: no need to split them
    return false;
  for (auto statement : split_statements(script))
    if (statement_leaves_state(statement))
      return true;
  return false;
}

bool changes_session_setting(std::string_view statement) {
  auto first = leading_keyword(statement); // per statement on the fast lane: one word first
  if (first == "RESET")
    return true;
  if (first != "SET")
    return false;
  auto words = leading_keywords(statement, 2);
  return words != "SET LOCAL" && words != "SET TRANSACTION";
}

size_t highest_placeholder(std::string_view s) {
  size_t highest = 0;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (c == '\'' || c == '"') {
      i = skip_quoted(s, i, c);
    } else if (s.substr(i, 2) == "--" || s.substr(i, 2) == "/*") {
      i = skip_noise(s, i);
    } else if (c == '$' && i + 1 < s.size()
               && std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
      size_t n = 0;
      for (++i; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]));
           ++i)
        n = std::min<size_t>(n * 10 + static_cast<size_t>(s[i] - '0'), 65535);
      highest = std::max(highest, n);
    } else if (c == '$') {
      i = skip_dollar(s, i);
    } else {
      ++i;
    }
  }
  return highest;
}

std::string_view preview(std::string_view sql, size_t max_bytes) {
  if (sql.size() <= max_bytes)
    return sql;
  auto cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(sql[cut]) & 0xC0) == 0x80)
    --cut; // back to the first byte of a character
  return sql.substr(0, cut);
}

bool returns_rows(std::string_view keyword) {
  for (auto k : {"SELECT", "WITH", "VALUES", "TABLE", "SHOW", "EXPLAIN",
                 "PRAGMA", "DESCRIBE", "DESC", "FROM", "SUMMARIZE"})
    if (keyword == k)
      return true;
  return false;
}

std::string_view after_leading_keyword(std::string_view statement) {
  size_t i = skip_noise(statement, 0);
  while (i < statement.size()
         && (std::isalpha(static_cast<unsigned char>(statement[i])) || statement[i] == '_'))
    ++i;
  return statement.substr(skip_noise(statement, i));
}

std::string leading_keyword(std::string_view statement) {
  return leading_keywords(statement, 1);
}

} // namespace qf::sql
