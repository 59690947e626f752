// A statement's shape without its values: every string and number literal
// replaced by a placeholder, read the way each frontend's dialect writes
// them, so that equal queries with different values share one digest and
// one fingerprint. What history keeps when SQL must not leave a worker
// (workerApi.history.redaction: maskLiterals), and what it groups by.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace qf::sql {

/// How a frontend's clients write literals and comments.
/// - postgres: '' doubles a quote; E'' strings take backslash escapes
///   (standard_conforming_strings, the default, leaves them literal in
///   plain ones); B'', X'', U&'' strings; $tag$ dollar quotes; $1 is a
///   parameter; "" quotes names; -- and nested /* */ comments.
/// - mysql: '' and "" are strings, with backslash escapes; `` quotes
///   names; X'', B'', N'' and 0x literals; #, "-- " and /* */ comments.
/// - trino: '' strings; X'' and U&''; "" names; -- and /* */ comments.
enum class dialect { postgres, mysql, trino };

/// The dialect of a record's frontend protocol (trinoHttp, postgresWire,
/// mysqlWire); Trino's for any other.
dialect dialect_of_protocol(std::string_view protocol);

/// The parameterized digest: literals as `?`, comments gone, each run of
/// whitespace one space, no space at either end. Parameters ($1, ?) stay
/// as they are. An unterminated string or comment runs to the end.
std::string parameterized(std::string_view sql, dialect d);

/// Free text that may quote values (an error message): whatever stands
/// between single or double quotes, and every number that is not part of
/// a word, as `?`; the rest as it was. Names a message quotes go too:
/// PostgreSQL quotes values with "" as well ('invalid input syntax for
/// type integer: "42x"').
std::string masked_text(std::string_view text);

/// A 64-bit fingerprint (FNV-1a) as a signed BIGINT keeps it; never 0,
/// which means "not computed".
int64_t fingerprint(std::string_view text);

} // namespace qf::sql
