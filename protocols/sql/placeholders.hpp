// Finding and replacing parameter placeholders in MySQL-dialect SQL, where
// strings take backslash escapes and identifiers take backticks. The MySQL
// frontend turns a prepared statement's `?` into the `$n` every engine takes;
// the MySQL engine turns `$n` into quoted literals.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace qf::sql {

enum class placeholder_style {
  question_mark, // ?      numbered by position, from 1
  dollar,        // $1, $2 numbered by their digits
};

/// Copies `statement`, replacing each placeholder outside strings, quoted
/// identifiers and comments with `replace(n)`.
std::string replace_placeholders(std::string_view statement,
                                 placeholder_style style,
                                 const std::function<std::string(size_t)>& replace);

/// An integer a server reads the same quoted or not; engines that splice
/// parameters in leave it bare, so that LIMIT $1 works.
bool is_plain_integer(std::string_view v);

/// Which $n placeholders a LIMIT or OFFSET takes ("LIMIT $1", "LIMIT $1,
/// $2", "LIMIT $1 OFFSET $2"), indexed by n - 1: a server-side bind reads
/// any number there (rounded) and a string of one; a literal spliced in
/// there must be an integer.
std::vector<bool> limit_placeholders(std::string_view sql);

/// What a parameter's value is, where its client said (a MySQL prepared
/// statement's parameter types), so that the literal spliced in has the
/// type a server-side bind would give it: an integer bare, a real as a
/// double (1.5e0: 10/? is not DECIMAL), text quoted, bytes quoted as
/// binary, dates and times as typed literals. unknown: judged by the value.
enum class literal_kind : uint8_t { unknown, integer, real, text, bytes, date, datetime, time };

/// How many `?` placeholders a MySQL statement has.
size_t count_question_marks(std::string_view statement);

} // namespace qf::sql
