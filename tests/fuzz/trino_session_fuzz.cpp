// Fuzzes what a Trino client sends us: header lines ("Name: value") are
// parsed as a client session, and every value is pushed through the
// QueryResults encoder, whose output must stay valid JSON.
#include "protocols/common/json_writer.hpp"
#include "protocols/trino/client_session.hpp"
#include "protocols/trino/query_results.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto text = std::string_view{reinterpret_cast<const char*>(data), size};
  std::vector<std::pair<std::string, std::string>> headers;
  while (!text.empty()) {
    auto eol = text.find('\n');
    auto line = text.substr(0, eol);
    auto colon = line.find(':');
    if (colon != std::string_view::npos)
      headers.emplace_back(std::string{line.substr(0, colon)},
                           std::string{line.substr(colon + 1)});
    if (eol == std::string_view::npos)
      break;
    text.remove_prefix(eol + 1);
  }
  auto session = qf::trino::parse_client_session(headers);

  std::vector<qf::column> cols{{"s", {qf::type_id::varchar}},
                               {"n", {qf::type_id::bigint}},
                               {"b", {qf::type_id::varbinary}}};
  qf::row_batch rows;
  rows.width = cols.size();
  for (const auto& [k, v] : headers) {
    rows.cells.emplace_back(k);
    rows.cells.emplace_back(v); // not a number: must come out as a string
    rows.cells.emplace_back(qf::trino::percent_decode(v));
  }
  qf::trino::results_page page;
  page.id = session.user;
  page.columns = &cols;
  page.rows = &rows;
  page.row_count = rows.rows();
  page.error = qf::trino::query_error{session.password,
                                      qf::trino::errors::syntax_error};
  auto json = qf::trino::encode(page);
  if (nlohmann::json::parse(json, nullptr, false).is_discarded())
    __builtin_trap();
  std::string decoded;
  (void) qf::json_text::base64_decode(session.schema, decoded);
  return 0;
}
