// The binary protocol of prepared statements (COM_STMT_EXECUTE): parameter
// values as the client sends them, and result rows as the client reads
// them. Values cross to and from the canonical text form of rows.hpp.
#pragma once

#include "protocols/common/rows.hpp"
#include "protocols/mysqlwire/packets.hpp"
#include "protocols/sql/placeholders.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qf::mysqlwire {

/// A parameter's type as the client declared it: the MySQL type code and
/// whether it is unsigned.
struct param_type {
  uint8_t code = 253; // VAR_STRING
  bool is_unsigned = false;
};

/// How the parameter's value goes into SQL text (sql::literal_kind); a
/// DECIMAL, sent as a string, is text, as a server-side bind takes it.
sql::literal_kind literal_kind_of(const param_type& t);

/// Decodes the parameters of an execute into text (nullopt is NULL).
/// `types` holds the types bound by an earlier execute and is updated when
/// the client sends new ones. nullopt when the bytes are malformed.
std::optional<std::vector<std::optional<std::string>>> decode_parameters(
  std::string_view bytes, size_t count, std::vector<param_type>& types);

/// One binary-protocol row: header, NULL bitmap, then each non-NULL cell in
/// the binary form of its column's type.
/// The same for columns as their server described them (server_field):
/// each cell in the binary form of the server's type.
std::string binary_row(const std::vector<server_field>& fields, const row_batch& batch, size_t row);

std::string binary_row(const std::vector<column>& cols, const row_batch& batch,
                       size_t row);

} // namespace qf::mysqlwire
