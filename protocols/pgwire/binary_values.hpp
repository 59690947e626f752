// PostgreSQL's binary formats for the types beyond the fixed-width numbers:
// numeric, date, time, timestamp(tz) and uuid, to and from the canonical
// text of rows.hpp. pgjdbc asks for these in binary once it has seen a
// statement's columns.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace qf::pgwire {

/// Each appends the binary form of canonical text to out; false when the
/// text is not of that type.
bool numeric_to_binary(std::string_view text, std::string& out);
bool date_to_binary(std::string_view text, std::string& out);
bool time_to_binary(std::string_view text, std::string& out);
bool timestamp_to_binary(std::string_view text, std::string& out);
bool uuid_to_binary(std::string_view text, std::string& out);

/// Each reads a binary parameter back into canonical text; nullopt when
/// the bytes are malformed.
std::optional<std::string> numeric_from_binary(std::string_view bytes);
std::optional<std::string> date_from_binary(std::string_view bytes);
std::optional<std::string> timestamp_from_binary(std::string_view bytes);
std::optional<std::string> uuid_from_binary(std::string_view bytes);

} // namespace qf::pgwire
