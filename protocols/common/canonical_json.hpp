// JSON in the canonical form of RFC 8785 (JCS): object members sorted by
// their names' UTF-16 code units, no whitespace, numbers as ECMAScript
// prints them, strings with only the escapes JSON requires. Equal values
// give equal bytes, whatever order or spelling they arrived in: snapshot
// revisions hash this form.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>

namespace qf::json_text {

/// The canonical text of v; nullopt when a string in it is not valid UTF-8
/// or a number is not finite (neither can be written canonically).
std::optional<std::string> canonical(const nlohmann::json& v);

/// A finite double as ECMAScript's Number.prototype.toString writes it
/// (shortest round trip: 4.5, 1e+30, 0.002, 1e-27).
std::string ecmascript_number(double x);

} // namespace qf::json_text
