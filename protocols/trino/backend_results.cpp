#include "protocols/trino/backend_results.hpp"

#include "protocols/common/json_depth.hpp"
#include "protocols/common/json_writer.hpp"

#include <nlohmann/json.hpp>

#include <charconv>
#include <stdexcept>

namespace qf::trino {

namespace {

using json = nlohmann::json;

bool starts_with(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}

/// The numbers inside "name(a,b)"; zeros when absent or malformed.
std::pair<int, int> arguments(std::string_view name) {
  auto open = name.find('(');
  auto close = name.find(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open)
    return {0, 0};
  auto inner = name.substr(open + 1, close - open - 1);
  int a = 0;
  int b = 0;
  auto comma = inner.find(',');
  auto first = inner.substr(0, comma);
  std::from_chars(first.data(), first.data() + first.size(), a);
  if (comma != std::string_view::npos) {
    auto second = inner.substr(comma + 1);
    while (!second.empty() && second.front() == ' ')
      second.remove_prefix(1);
    std::from_chars(second.data(), second.data() + second.size(), b);
  }
  return {a, b};
}

uint8_t clamp(int v, int max) {
  return static_cast<uint8_t>(std::max(0, std::min(v, max)));
}

std::string text_of(const json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

cell cell_of(const json& v, const sql_type& t) {
  if (v.is_null())
    return std::nullopt;
  if (v.is_boolean())
    return std::string{v.get<bool>() ? "true" : "false"};
  if (!v.is_string())
    return v.dump(); // numbers, and arrays/maps/rows as JSON text
  auto s = v.get<std::string>();
  switch (t.id) {
    case type_id::varbinary: {
      std::string raw;
      if (!json_text::base64_decode(s, raw))
        throw std::invalid_argument("a varbinary value is not base64");
      return raw;
    }
    case type_id::timestamp_tz:
      if (s.size() > 4 && s.compare(s.size() - 4, 4, " UTC") == 0)
        s.resize(s.size() - 4);
      return s;
    default:
      return s;
  }
}

std::vector<column> columns_of(const json& cols) {
  if (!cols.is_array())
    throw std::invalid_argument("columns is not a list");
  std::vector<column> out;
  for (const auto& c : cols) {
    if (!c.is_object() || !c.contains("name") || !c.contains("type"))
      throw std::invalid_argument("a column without name or type");
    out.push_back({text_of(c["name"]), parse_type_name(text_of(c["type"]))});
  }
  return out;
}

} // namespace

sql_type parse_type_name(std::string_view name) {
  auto [a, b] = arguments(name);
  bool with_zone = name.find("with time zone") != std::string_view::npos;
  if (starts_with(name, "varchar") || starts_with(name, "char"))
    return {type_id::varchar};
  if (name == "boolean")
    return {type_id::boolean};
  if (name == "tinyint")
    return {type_id::tinyint};
  if (name == "smallint")
    return {type_id::smallint};
  if (name == "integer")
    return {type_id::integer};
  if (name == "bigint")
    return {type_id::bigint};
  if (name == "real")
    return {type_id::real};
  if (name == "double")
    return {type_id::double_precision};
  if (starts_with(name, "decimal"))
    return {type_id::decimal, clamp(a, 38), clamp(b, 38)};
  if (name == "date")
    return {type_id::date};
  if (starts_with(name, "timestamp"))
    return {with_zone ? type_id::timestamp_tz : type_id::timestamp,
            clamp(name.find('(') == std::string_view::npos ? 3 : a, 12)};
  if (starts_with(name, "time"))
    return with_zone ? sql_type{type_id::varchar}
                     : sql_type{type_id::time,
                                clamp(name.find('(') == std::string_view::npos ? 3 : a, 12)};
  if (name == "varbinary")
    return {type_id::varbinary};
  if (name == "uuid")
    return {type_id::uuid};
  if (name == "interval day to second")
    return {type_id::interval};
  if (name == "unknown")
    return {type_id::unknown};
  if (name == "json" || starts_with(name, "array") || starts_with(name, "map")
      || starts_with(name, "row"))
    return {type_id::json};
  return {type_id::varchar}; // ipaddress, interval year to month, ...: their text
}

backend_page parse_backend_page(std::string_view text, const std::vector<column>* known) {
  if (!json_text::nests_within(text, 64))
    throw std::invalid_argument("the response nests deeper than 64 levels");
  auto doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    throw std::invalid_argument("the response is not a JSON object");
  backend_page page;
  if (auto id = doc.find("id"); id != doc.end())
    page.id = text_of(*id);
  if (auto next = doc.find("nextUri"); next != doc.end() && next->is_string())
    page.next_uri = next->get<std::string>();
  if (auto stats = doc.find("stats"); stats != doc.end() && stats->is_object())
    if (auto state = stats->find("state"); state != stats->end())
      page.state = text_of(*state);
  if (auto cols = doc.find("columns"); cols != doc.end() && !cols->is_null())
    page.columns = columns_of(*cols);
  if (auto count = doc.find("updateCount"); count != doc.end() && count->is_number_integer())
    page.update_count = count->get<int64_t>();
  if (auto err = doc.find("error"); err != doc.end() && err->is_object()) {
    backend_error e;
    e.message = err->contains("message") ? text_of((*err)["message"]) : "query failed";
    if (err->contains("errorName"))
      e.error_name = text_of((*err)["errorName"]);
    if (err->contains("errorType"))
      e.error_type = text_of((*err)["errorType"]);
    if (auto code = err->find("errorCode"); code != err->end() && code->is_number_integer())
      e.error_code = code->get<int>();
    page.error = std::move(e);
  }
  auto data = doc.find("data");
  if (data == doc.end() || data->is_null())
    return page;
  const auto* cols = page.columns ? &*page.columns : known;
  if (!cols)
    throw std::invalid_argument("data arrived before the columns");
  if (!data->is_array())
    throw std::invalid_argument("data is not a list");
  page.rows.width = cols->size();
  page.rows.cells.reserve(data->size() * cols->size());
  for (const auto& row : *data) {
    if (!row.is_array() || row.size() != cols->size())
      throw std::invalid_argument("a row does not match the columns");
    for (size_t i = 0; i < row.size(); ++i)
      page.rows.cells.push_back(cell_of(row[i], (*cols)[i].type));
  }
  return page;
}

} // namespace qf::trino
