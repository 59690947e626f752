#include "protocols/sql/placeholders.hpp"

#include <algorithm>
#include <cctype>

namespace qf::sql {

namespace {

bool is_digit(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
}

/// Index just past a quoted run starting at i. In MySQL a backslash escapes
/// the next character inside strings, and a doubled quote stands for one.
size_t skip_mysql_quoted(std::string_view s, size_t i) {
  char quote = s[i];
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\' && quote != '`') {
      ++i;
    } else if (s[i] == quote) {
      if (i + 1 < s.size() && s[i + 1] == quote)
        ++i;
      else
        return i + 1;
    }
  }
  return s.size();
}

/// Index just past a comment starting at i, or i when none starts there.
size_t skip_mysql_comment(std::string_view s, size_t i) {
  if (s[i] == '#' || s.substr(i, 3) == "-- " || s.substr(i, 3) == "--\t"
      || s.substr(i, 3) == "--\n" || (s.substr(i, 2) == "--" && i + 2 == s.size())) {
    auto nl = s.find('\n', i);
    return nl == std::string_view::npos ? s.size() : nl + 1;
  }
  if (s.substr(i, 2) == "/*") {
    auto end = s.find("*/", i + 2);
    return end == std::string_view::npos ? s.size() : end + 2;
  }
  return i;
}

} // namespace

std::string replace_placeholders(std::string_view s, placeholder_style style,
                                 const std::function<std::string(size_t)>& replace) {
  std::string out;
  out.reserve(s.size());
  size_t position = 0;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    size_t next = i;
    if (c == '\'' || c == '"' || c == '`') {
      next = skip_mysql_quoted(s, i);
    } else if ((next = skip_mysql_comment(s, i)) != i) {
      // comment copied below
    } else if (style == placeholder_style::question_mark && c == '?') {
      out += replace(++position);
      ++i;
      continue;
    } else if (style == placeholder_style::dollar && c == '$' && i + 1 < s.size()
               && is_digit(s[i + 1])) {
      size_t n = 0;
      for (++i; i < s.size() && is_digit(s[i]); ++i)
        n = std::min<size_t>(n * 10 + static_cast<size_t>(s[i] - '0'), 65535);
      out += replace(n);
      continue;
    } else {
      next = i + 1;
    }
    out.append(s.substr(i, next - i));
    i = next;
  }
  return out;
}

size_t count_question_marks(std::string_view statement) {
  size_t count = 0;
  replace_placeholders(statement, placeholder_style::question_mark,
                       [&](size_t n) {
                         count = n;
                         return std::string{};
                       });
  return count;
}

bool is_plain_integer(std::string_view v) {
  size_t i = v.size() > 1 && v[0] == '-' ? 1 : 0;
  if (i >= v.size() || v.size() - i > 18 || (v[i] == '0' && v.size() - i > 1))
    return false;
  for (; i < v.size(); ++i)
    if (v[i] < '0' || v[i] > '9')
      return false;
  return true;
}

std::vector<bool> limit_placeholders(std::string_view sql) {
  std::vector<bool> in_limit;
  auto word_at = [&](size_t i, std::string_view w) {
    if (i + w.size() > sql.size() || (i > 0 && (std::isalnum(static_cast<unsigned char>(sql[i - 1])) || sql[i - 1] == '_')))
      return false;
    for (size_t k = 0; k < w.size(); ++k)
      if (std::tolower(static_cast<unsigned char>(sql[i + k])) != w[k])
        return false;
    return i + w.size() == sql.size() || !std::isalnum(static_cast<unsigned char>(sql[i + w.size()]));
  };
  auto skip_space = [&](size_t i) {
    while (i < sql.size() && std::isspace(static_cast<unsigned char>(sql[i])))
      ++i;
    return i;
  };
  auto placeholder = [&](size_t& i) { // $n at i: marks it, moves past it
    if (i >= sql.size() || sql[i] != '$')
      return false;
    size_t n = 0, j = i + 1;
    for (; j < sql.size() && std::isdigit(static_cast<unsigned char>(sql[j])); ++j)
      n = std::min<size_t>(n * 10 + static_cast<size_t>(sql[j] - '0'), 65535);
    if (j == i + 1 || n == 0)
      return false;
    if (in_limit.size() < n)
      in_limit.resize(n);
    in_limit[n - 1] = true;
    i = j;
    return true;
  };
  for (size_t i = 0; i < sql.size(); ++i) {
    if (word_at(i, "offset")) { // LIMIT 10 OFFSET $1
      size_t j = skip_space(i + 6);
      placeholder(j);
      continue;
    }
    if (!word_at(i, "limit"))
      continue;
    size_t j = skip_space(i + 5);
    if (!placeholder(j))
      continue;
    j = skip_space(j);
    if (j < sql.size() && sql[j] == ',')
      j = skip_space(j + 1);
    else if (word_at(j, "offset"))
      j = skip_space(j + 6);
    placeholder(j);
  }
  return in_limit;
}


} // namespace qf::sql
