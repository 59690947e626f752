// Appends JSON text to a string. Faster than building a DOM for large
// result pages, and always valid UTF-8 (bad bytes become U+FFFD).
#pragma once

#include <string>
#include <string_view>

namespace qf::json_text {

/// Appends s as a quoted JSON string.
void append_string(std::string& out, std::string_view s);

/// Whether s is valid UTF-8 without NUL bytes: text PostgreSQL stores.
bool storable_text(std::string_view s);

/// s with each malformed byte and each NUL as U+FFFD.
std::string as_storable_text(std::string_view s);

/// True when s is a JSON number as RFC 8259 writes it.
bool is_number(std::string_view s);

/// Standard base64 with padding.
std::string base64_encode(std::string_view bytes);

/// Decodes standard base64; nullopt-like empty+false on bad input.
bool base64_decode(std::string_view text, std::string& out);

} // namespace qf::json_text
