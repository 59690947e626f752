// The other side of Trino's client protocol: reading the QueryResults
// documents a Trino cluster sends us when QueryFlux is its client. Pure:
// no IO. Cells come out in the canonical text form of common/rows.hpp.
#pragma once

#include "protocols/common/rows.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qf::trino {

struct backend_error {
  std::string message;
  std::string error_name; // SYNTAX_ERROR, USER_CANCELED, ...
  std::string error_type; // USER_ERROR, INTERNAL_ERROR, ...
  int error_code = 0;
};

struct backend_page {
  std::string id;
  std::string next_uri; // empty: the query is done
  std::string state;    // stats.state
  /// Set once the cluster knows them (not on the first pages).
  std::optional<std::vector<column>> columns;
  row_batch rows;
  std::optional<backend_error> error;
  int64_t update_count = -1;
};

/// Parses one QueryResults document. `columns` are those known from an
/// earlier page, to read data that comes without them. Throws
/// std::invalid_argument with the reason when the document is not one.
backend_page parse_backend_page(std::string_view json,
                                const std::vector<column>* columns = nullptr);

/// Reads Trino's type name ("decimal(10,2)", "timestamp(3) with time zone",
/// "array(integer)") as ours; nested and unknown types become json.
sql_type parse_type_name(std::string_view name);

} // namespace qf::trino
