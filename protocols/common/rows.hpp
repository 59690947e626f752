// Result sets as they travel from an engine to a frontend: typed columns and
// batches of cells in their canonical text form (what PostgreSQL's text
// format and Trino's JSON both start from).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace qf {

enum class type_id : uint8_t {
  unknown, // the type of a bare NULL
  boolean,
  tinyint,
  smallint,
  integer,
  bigint,
  real,
  double_precision,
  decimal,
  varchar,
  varbinary, // cell holds the raw bytes
  date,      // YYYY-MM-DD
  time,      // HH:MM:SS[.ffffff]
  timestamp, // YYYY-MM-DD HH:MM:SS[.ffffff]
  timestamp_tz,
  uuid,
  json,
  interval,
};

struct sql_type {
  type_id id = type_id::unknown;
  uint8_t precision = 0; // decimal precision; fractional digits of time types
  uint8_t scale = 0;     // decimal scale

  friend bool operator==(const sql_type&, const sql_type&) = default;
};

struct column {
  std::string name;
  sql_type type;
};

using cell = std::optional<std::string>;

/// Rows in row-major order; width is the number of columns.
struct row_batch {
  size_t width = 0;
  std::vector<cell> cells;

  size_t rows() const {
    return width == 0 ? 0 : cells.size() / width;
  }

  const cell& at(size_t row, size_t col) const {
    return cells[row * width + col];
  }
};

} // namespace qf
