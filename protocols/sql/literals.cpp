#include "protocols/sql/literals.hpp"

namespace qf::sql {

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

/// A letter, an underscore or a byte of a multibyte UTF-8 character: what
/// a name may start with in all three dialects.
bool starts_word(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'
         || static_cast<unsigned char>(c) >= 0x80;
}

bool in_word(char c) {
  return starts_word(c) || is_digit(c) || c == '$';
}

bool is_hex(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

/// Past a quoted run opened at `i` by `quote`: a doubled quote stays
/// inside; with `backslashes`, so does any character after a backslash.
size_t skip_quoted(std::string_view s, size_t i, char quote, bool backslashes) {
  for (++i; i < s.size(); ++i) {
    if (backslashes && s[i] == '\\') {
      ++i;
      continue;
    }
    if (s[i] == quote) {
      if (i + 1 < s.size() && s[i + 1] == quote) {
        ++i;
        continue;
      }
      return i + 1;
    }
  }
  return s.size();
}

/// A dollar quote's opening tag at `i` ($$ or $tag$), its length; 0 when
/// `$` opens none there.
size_t dollar_tag(std::string_view s, size_t i) {
  size_t j = i + 1;
  if (j < s.size() && s[j] == '$')
    return 2;
  if (j >= s.size() || !starts_word(s[j]))
    return 0;
  while (j < s.size() && (starts_word(s[j]) || is_digit(s[j])))
    ++j;
  return j < s.size() && s[j] == '$' ? j - i + 1 : 0;
}

/// Past a number at `i`: digits (with PostgreSQL 16's underscores), a
/// fraction, an exponent; 0x, 0o, 0b prefixes.
size_t skip_number(std::string_view s, size_t i) {
  auto n = s.size();
  if (s[i] == '0' && i + 2 < n && (lower(s[i + 1]) == 'x' || lower(s[i + 1]) == 'o'
                                   || lower(s[i + 1]) == 'b')
      && is_hex(s[i + 2])) {
    i += 2;
    while (i < n && (is_hex(s[i]) || s[i] == '_'))
      ++i;
    return i;
  }
  while (i < n && (is_digit(s[i]) || s[i] == '_'))
    ++i;
  if (i < n && s[i] == '.') {
    ++i;
    while (i < n && is_digit(s[i]))
      ++i;
  }
  if (i < n && lower(s[i]) == 'e') {
    auto j = i + 1;
    if (j < n && (s[j] == '+' || s[j] == '-'))
      ++j;
    if (j < n && is_digit(s[j])) {
      i = j;
      while (i < n && is_digit(s[i]))
        ++i;
    }
  }
  return i;
}

/// Past a comment at `i`, or `i` when none starts there.
size_t skip_comment(std::string_view s, size_t i, dialect d) {
  auto n = s.size();
  auto to_line_end = [&](size_t j) {
    while (j < n && s[j] != '\n')
      ++j;
    return j;
  };
  if (s[i] == '-' && i + 1 < n && s[i + 1] == '-') {
    // MySQL takes "--" for a comment only before a space or a control
    // character: "1--1" is 1 - -1.
    if (d != dialect::mysql || i + 2 >= n || static_cast<unsigned char>(s[i + 2]) <= ' ')
      return to_line_end(i);
    return i;
  }
  if (s[i] == '#' && d == dialect::mysql)
    return to_line_end(i);
  if (s[i] == '/' && i + 1 < n && s[i + 1] == '*') {
    // PostgreSQL nests block comments; the others end at the first */.
    int depth = 1;
    for (size_t j = i + 2; j < n; ++j) {
      if (s[j] == '*' && j + 1 < n && s[j + 1] == '/') {
        ++j;
        if (--depth == 0)
          return j + 1;
      } else if (d == dialect::postgres && s[j] == '/' && j + 1 < n && s[j + 1] == '*') {
        ++j;
        ++depth;
      }
    }
    return n;
  }
  return i;
}

/// Whether the word `w` prefixes a string literal in `d` (E'', X'', ...).
bool prefixes_string(std::string_view w, dialect d) {
  if (w.size() != 1)
    return false;
  char c = lower(w[0]);
  switch (d) {
    case dialect::postgres:
      return c == 'e' || c == 'b' || c == 'x' || c == 'n';
    case dialect::mysql:
      return c == 'b' || c == 'x' || c == 'n';
    case dialect::trino:
      return c == 'x';
  }
  return false;
}

class digest_writer {
public:
  digest_writer(size_t size_hint, dialect d) : mysql_(d == dialect::mysql) {
    out_.reserve(size_hint);
  }

  void space() {
    space_ = true;
  }

  void put(std::string_view text) {
    // Two minus signs MySQL read as such ("1--1") stay apart: side by
    // side before a space they would read as a comment the next time.
    if (mysql_ && !out_.empty() && out_.back() == '-' && text.front() == '-')
      space_ = true;
    if (space_ && !out_.empty())
      out_ += ' ';
    space_ = false;
    out_.append(text);
  }

  std::string take() {
    return std::move(out_);
  }

private:
  std::string out_;
  bool mysql_;
  bool space_ = false;
};

} // namespace

dialect dialect_of_protocol(std::string_view protocol) {
  if (protocol == "postgresWire")
    return dialect::postgres;
  if (protocol == "mysqlWire")
    return dialect::mysql;
  return dialect::trino;
}

std::string parameterized(std::string_view s, dialect d) {
  digest_writer out{s.size(), d};
  const auto n = s.size();
  size_t i = 0;
  while (i < n) {
    char c = s[i];
    if (is_space(c)) {
      out.space();
      ++i;
      continue;
    }
    if (auto past = skip_comment(s, i, d); past != i) {
      out.space();
      i = past;
      continue;
    }
    if (c == '\'') {
      // MySQL escapes with backslashes in every string; PostgreSQL only
      // in E'' strings, which the prefix case below reads.
      i = skip_quoted(s, i, '\'', d == dialect::mysql);
      out.put("?");
      continue;
    }
    if (c == '"') {
      auto past = skip_quoted(s, i, '"', d == dialect::mysql);
      out.put(d == dialect::mysql ? std::string_view{"?"} : s.substr(i, past - i));
      i = past;
      continue;
    }
    if (c == '`' && d == dialect::mysql) {
      auto past = skip_quoted(s, i, '`', false);
      out.put(s.substr(i, past - i));
      i = past;
      continue;
    }
    if (c == '$' && d == dialect::postgres) {
      if (i + 1 < n && is_digit(s[i + 1])) { // a parameter
        auto j = i + 1;
        while (j < n && is_digit(s[j]))
          ++j;
        out.put(s.substr(i, j - i));
        i = j;
        continue;
      }
      if (auto tag = dollar_tag(s, i)) {
        auto close = s.find(s.substr(i, tag), i + tag);
        i = close == std::string_view::npos ? n : close + tag;
        out.put("?");
        continue;
      }
    }
    if (is_digit(c) || (c == '.' && i + 1 < n && is_digit(s[i + 1]))) {
      auto past = skip_number(s, i);
      if (past < n && starts_word(s[past])) {
        // "1st", MySQL's names that start with digits: a word, kept.
        while (past < n && in_word(s[past]))
          ++past;
        out.put(s.substr(i, past - i));
      } else {
        out.put("?");
      }
      i = past;
      continue;
    }
    if (starts_word(c)) {
      auto j = i;
      while (j < n && in_word(s[j]))
        ++j;
      auto word = s.substr(i, j - i);
      if (j < n && s[j] == '\'' && prefixes_string(word, d)) {
        i = skip_quoted(s, j, '\'', d == dialect::mysql || lower(word[0]) == 'e');
        out.put("?");
        continue;
      }
      if (word.size() == 1 && lower(word[0]) == 'u' && d != dialect::mysql && j + 1 < n
          && s[j] == '&' && s[j + 1] == '\'') { // U&'d\0061t\+000061'
        i = skip_quoted(s, j + 1, '\'', false);
        out.put("?");
        continue;
      }
      out.put(word);
      i = j;
      continue;
    }
    out.put(s.substr(i, 1));
    ++i;
  }
  return out.take();
}

std::string masked_text(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  const auto n = s.size();
  size_t i = 0;
  while (i < n) {
    char c = s[i];
    if (c == '\'' || c == '"') {
      i = skip_quoted(s, i, c, false);
      out += '?';
      continue;
    }
    if (is_digit(c) && (i == 0 || !in_word(s[i - 1]))) {
      auto past = skip_number(s, i);
      if (past < n && starts_word(s[past])) { // 42P01, 3rd: a word
        while (past < n && in_word(s[past]))
          ++past;
        out.append(s.substr(i, past - i));
      } else {
        out += '?';
      }
      i = past;
      continue;
    }
    out += c;
    ++i;
  }
  return out;
}

int64_t fingerprint(std::string_view text) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  auto v = static_cast<int64_t>(h);
  return v == 0 ? 1 : v;
}

} // namespace qf::sql
