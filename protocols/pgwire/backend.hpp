// PostgreSQL protocol 3.0, server to client: message encoders that append
// to an output buffer, and our types mapped onto PostgreSQL type OIDs.
#pragma once

#include "protocols/common/rows.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qf::pgwire {

/// The PostgreSQL type OID a column is announced with.
uint32_t type_oid(const sql_type& t);

/// A cell in PostgreSQL's text format ("t"/"f", "\x..." for bytea).
std::string text_value(const sql_type& t, const std::string& canonical);

/// A cell in binary format; false when this type has no binary encoding
/// here (the caller then refuses the format).
bool binary_value(const sql_type& t, const std::string& canonical,
                  std::string& out);

/// Whether binary_value can encode cells of this type.
bool has_binary_format(const sql_type& t);

/// A binary-format parameter of the given type OID in its text form;
/// nullopt for malformed bytes or types without a binary decoder here.
std::optional<std::string> binary_param_to_text(uint32_t oid,
                                                std::string_view bytes);

/// Fields of an ErrorResponse or NoticeResponse.
struct error_fields {
  std::string severity = "ERROR"; // ERROR, FATAL, NOTICE...
  std::string sqlstate = "XX000";
  std::string message;
  std::string detail;
};

void authentication_ok(std::string& out);
void authentication_cleartext(std::string& out);
void parameter_status(std::string& out, std::string_view name,
                      std::string_view value);
void backend_key_data(std::string& out, int32_t pid, int32_t secret);
/// status: 'I' idle, 'T' in a transaction, 'E' in a failed transaction.
void ready_for_query(std::string& out, char status);
/// formats: one per column, or one for all, or none (all text).
void row_description(std::string& out, const std::vector<column>& cols,
                     const std::vector<int16_t>& formats);
void no_data(std::string& out);
void parameter_description(std::string& out,
                           const std::vector<uint32_t>& types);
/// Appends rows [first, first + count) of batch as DataRow messages.
void data_rows(std::string& out, const std::vector<column>& cols,
               const std::vector<int16_t>& formats, const row_batch& batch,
               size_t first, size_t count);
void command_complete(std::string& out, std::string_view tag);
void empty_query_response(std::string& out);
void parse_complete(std::string& out);
void bind_complete(std::string& out);
void close_complete(std::string& out);
void portal_suspended(std::string& out);
void error_response(std::string& out, const error_fields& e);
void notice_response(std::string& out, const error_fields& e);

} // namespace qf::pgwire
