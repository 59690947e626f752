// Writes QueryResults JSON by hand: result pages are the hot path and can
// hold thousands of rows, so no DOM is built.
#include "protocols/trino/query_results.hpp"

#include "protocols/common/json_writer.hpp"

namespace qf::trino {

namespace {

const char* state_name(query_state s) {
  switch (s) {
    case query_state::queued:
      return "QUEUED";
    case query_state::running:
      return "RUNNING";
    case query_state::finished:
      return "FINISHED";
    case query_state::failed:
      return "FAILED";
  }
  return "FAILED";
}

const char* raw_type(type_id id) {
  switch (id) {
    case type_id::unknown:
      return "unknown";
    case type_id::boolean:
      return "boolean";
    case type_id::tinyint:
      return "tinyint";
    case type_id::smallint:
      return "smallint";
    case type_id::integer:
      return "integer";
    case type_id::bigint:
      return "bigint";
    case type_id::real:
      return "real";
    case type_id::double_precision:
      return "double";
    case type_id::decimal:
      return "decimal";
    case type_id::varchar:
      return "varchar";
    case type_id::varbinary:
      return "varbinary";
    case type_id::date:
      return "date";
    case type_id::time:
      return "time";
    case type_id::timestamp:
      return "timestamp";
    case type_id::timestamp_tz:
      return "timestamp with time zone";
    case type_id::uuid:
      return "uuid";
    case type_id::json:
      return "json";
    case type_id::interval:
      return "interval day to second";
  }
  return "unknown";
}

/// An unconstrained numeric has no Trino decimal(p,s): it travels as text.
sql_type trino_view(const sql_type& t) {
  if (t.id == type_id::decimal && t.precision == 0)
    return {type_id::varchar};
  return t;
}

void append_type_signature(std::string& out, const sql_type& given) {
  auto t = trino_view(given);
  out += "{\"rawType\":";
  json_text::append_string(out, raw_type(t.id));
  out += ",\"arguments\":[";
  auto arg = [&](long long v) {
    out += "{\"kind\":\"LONG\",\"value\":" + std::to_string(v) + "}";
  };
  switch (t.id) {
    case type_id::decimal:
      arg(t.precision);
      out += ',';
      arg(t.scale);
      break;
    case type_id::varchar:
      arg(2147483647);
      break;
    case type_id::time:
    case type_id::timestamp:
    case type_id::timestamp_tz:
      arg(t.precision);
      break;
    default:
      break;
  }
  out += "]}";
}

void append_stats(std::string& out, const query_stats& s) {
  bool done = s.state == query_state::finished || s.state == query_state::failed;
  out += "{\"state\":\"";
  out += state_name(s.state);
  out += "\",\"queued\":";
  out += s.state == query_state::queued ? "true" : "false";
  out += ",\"scheduled\":";
  out += s.state == query_state::queued ? "false" : "true";
  out += ",\"nodes\":1,\"totalSplits\":0,\"queuedSplits\":0,"
         "\"runningSplits\":0,\"completedSplits\":0,\"cpuTimeMillis\":0";
  out += ",\"wallTimeMillis\":" + std::to_string(s.elapsed_ms);
  out += ",\"queuedTimeMillis\":" + std::to_string(s.queued_ms);
  out += ",\"elapsedTimeMillis\":" + std::to_string(s.elapsed_ms);
  out += ",\"processedRows\":" + std::to_string(s.processed_rows);
  out += ",\"processedBytes\":0,\"physicalInputBytes\":0,"
         "\"peakMemoryBytes\":0,\"spilledBytes\":0";
  out += ",\"progressPercentage\":";
  out += done ? "100.0" : "0.0";
  out += '}';
}

void append_error(std::string& out, const query_error& e) {
  out += "{\"message\":";
  json_text::append_string(out, e.message);
  out += ",\"errorCode\":" + std::to_string(e.code.code);
  out += ",\"errorName\":\"";
  out += e.code.name;
  out += "\",\"errorType\":\"";
  out += e.code.type;
  out += "\",\"failureInfo\":{\"type\":\"io.queryflux.QueryFluxException\","
         "\"message\":";
  json_text::append_string(out, e.message);
  out += ",\"suppressed\":[],\"stack\":[]}}";
}

} // namespace

std::string type_name(const sql_type& given) {
  auto t = trino_view(given);
  switch (t.id) {
    case type_id::decimal:
      return "decimal(" + std::to_string(t.precision) + ","
             + std::to_string(t.scale) + ")";
    case type_id::time:
      return "time(" + std::to_string(t.precision) + ")";
    case type_id::timestamp:
      return "timestamp(" + std::to_string(t.precision) + ")";
    case type_id::timestamp_tz:
      return "timestamp(" + std::to_string(t.precision) + ") with time zone";
    default:
      return raw_type(t.id);
  }
}

void append_value(std::string& out, const sql_type& t, const cell& value) {
  if (!value) {
    out += "null";
    return;
  }
  const auto& v = *value;
  switch (t.id) {
    case type_id::boolean:
      out += (v == "true" || v == "t" || v == "1") ? "true" : "false";
      return;
    case type_id::tinyint:
    case type_id::smallint:
    case type_id::integer:
    case type_id::bigint:
    case type_id::real:
    case type_id::double_precision:
      // NaN and Infinity are not JSON numbers; Trino sends them as strings.
      if (json_text::is_number(v))
        out += v;
      else
        json_text::append_string(out, v);
      return;
    case type_id::varbinary:
      json_text::append_string(out, json_text::base64_encode(v));
      return;
    case type_id::timestamp_tz:
      json_text::append_string(out, v + " UTC");
      return;
    default:
      json_text::append_string(out, v);
  }
}

std::string encode(const results_page& page) {
  std::string out;
  out.reserve(512 + page.row_count * 32);
  out += "{\"id\":";
  json_text::append_string(out, page.id);
  out += ",\"infoUri\":";
  json_text::append_string(out, page.info_uri);
  if (!page.next_uri.empty()) {
    out += ",\"nextUri\":";
    json_text::append_string(out, page.next_uri);
  }
  if (page.columns) {
    out += ",\"columns\":[";
    bool first = true;
    for (const auto& c : *page.columns) {
      if (!first)
        out += ',';
      first = false;
      out += "{\"name\":";
      json_text::append_string(out, c.name);
      out += ",\"type\":";
      json_text::append_string(out, type_name(c.type));
      out += ",\"typeSignature\":";
      append_type_signature(out, c.type);
      out += '}';
    }
    out += ']';
  }
  if (page.rows && page.columns) {
    out += ",\"data\":[";
    const auto& cols = *page.columns;
    for (size_t r = 0; r < page.row_count; ++r) {
      if (r > 0)
        out += ',';
      out += '[';
      for (size_t c = 0; c < cols.size(); ++c) {
        if (c > 0)
          out += ',';
        append_value(out, cols[c].type, page.rows->at(page.first_row + r, c));
      }
      out += ']';
    }
    out += ']';
  }
  out += ",\"stats\":";
  append_stats(out, page.stats);
  if (page.error) {
    out += ",\"error\":";
    append_error(out, *page.error);
  }
  out += ",\"warnings\":[";
  if (page.warnings) {
    bool first = true;
    for (const auto& w : *page.warnings) {
      if (!first)
        out += ',';
      first = false;
      out += "{\"warningCode\":{\"code\":0,\"name\":";
      json_text::append_string(out, w.name);
      out += "},\"message\":";
      json_text::append_string(out, w.message);
      out += '}';
    }
  }
  out += "]}";
  return out;
}

} // namespace qf::trino
