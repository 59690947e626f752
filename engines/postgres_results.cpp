// libpq results into columns, canonical cells and engine errors.
#include "engines/postgres_results.hpp"

#include "protocols/common/hex.hpp"
#include "protocols/common/temporal.hpp"

namespace qf::engines {

/// libpq's own error text, trimmed of its trailing newline.
std::string pq_message(const char* text) {
  std::string s = text ? text : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
    s.pop_back();
  return s;
}

namespace {

error_kind classify(const char* sqlstate) {
  std::string_view code = sqlstate ? sqlstate : "";
  if (code == "57014")
    return error_kind::cancelled;
  if (code == "42601")
    return error_kind::syntax;
  if (code.empty() || code.substr(0, 2) == "08" || code.substr(0, 2) == "XX"
      || code.substr(0, 2) == "53" || code.substr(0, 2) == "57")
    return error_kind::internal;
  return error_kind::user;
}

} // namespace

engine_error result_error(PGresult* res) {
  auto* state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
  // The primary message alone: frontends add their own "ERROR:" framing.
  auto* primary = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
  return server_error(state ? state : "",
                      pq_message(primary ? primary : PQresultErrorMessage(res)));
}

engine_error server_error(const std::string& sqlstate, const std::string& message) {
  return engine_error(classify(sqlstate.c_str()), message, sqlstate);
}

namespace {

sql_type map_type(Oid oid, int mod) {
  switch (oid) {
    case 16:
      return {type_id::boolean};
    case 21:
      return {type_id::smallint};
    case 23:
      return {type_id::integer};
    case 20:
      return {type_id::bigint};
    case 700:
      return {type_id::real};
    case 701:
      return {type_id::double_precision};
    case 1700:
      if (mod >= 4) {
        auto m = mod - 4;
        return {type_id::decimal, static_cast<uint8_t>((m >> 16) & 0xFFFF),
                static_cast<uint8_t>(m & 0xFFFF)};
      }
      return {type_id::decimal, 0, 0}; // unconstrained numeric
    case 17:
      return {type_id::varbinary};
    case 1082:
      return {type_id::date};
    case 1083:
      return {type_id::time, static_cast<uint8_t>(mod >= 0 ? mod : 6)};
    case 1114:
      return {type_id::timestamp, static_cast<uint8_t>(mod >= 0 ? mod : 6)};
    case 1184:
      return {type_id::timestamp_tz, static_cast<uint8_t>(mod >= 0 ? mod : 6)};
    case 2950:
      return {type_id::uuid};
    case 114:
    case 3802:
      return {type_id::json};
    case 1186:
      return {type_id::interval};
    default:
      return {type_id::varchar}; // text, varchar, name, and the rest as text
  }
}


/// PostgreSQL's text output, turned into our canonical cell text.
std::string canonical(type_id t, const char* value, int length) {
  std::string_view v{value, static_cast<size_t>(length)};
  switch (t) {
    case type_id::boolean:
      return v == "t" ? "true" : "false";
    case type_id::varbinary: {
      if (v.substr(0, 2) != "\\x")
        return std::string{v};
      std::string out;
      out.reserve((v.size() - 2) / 2);
      for (size_t i = 2; i + 1 < v.size(); i += 2)
        out += static_cast<char>(hex_digit_value(v[i]) * 16 + hex_digit_value(v[i + 1]));
      return out;
    }
    case type_id::timestamp_tz:
      // In UTC, canonical: the actor path's sessions run in UTC ("+00"
      // dropped), the fast lane's in the server's TimeZone.
      return utc_timestamp_text(v);
    default:
      return std::string{v};
  }
}

} // namespace

std::vector<column> columns_of(PGresult* res) {
  std::vector<column> out;
  auto n = PQnfields(res);
  out.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    out.push_back({PQfname(res, i), map_type(PQftype(res, i), PQfmod(res, i))});
  return out;
}

void append_row(row_batch& out, const std::vector<column>& cols, PGresult* res,
                int row) {
  for (int c = 0; c < static_cast<int>(cols.size()); ++c) {
    if (PQgetisnull(res, row, c))
      out.cells.emplace_back();
    else
      out.cells.emplace_back(canonical(cols[static_cast<size_t>(c)].type.id,
                                       PQgetvalue(res, row, c),
                                       PQgetlength(res, row, c)));
  }
}

notice notice_of(const PGresult* res) {
  auto field = [res](int code) {
    const char* v = PQresultErrorField(res, code);
    return std::string{v ? v : ""};
  };
  return {field(PG_DIAG_SEVERITY), field(PG_DIAG_SQLSTATE), field(PG_DIAG_MESSAGE_PRIMARY)};
}

void keep_notices_from_stderr(PGconn* conn) {
  PQsetNoticeProcessor(conn, [](void*, const char*) {}, nullptr);
}

} // namespace qf::engines
