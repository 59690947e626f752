#include "protocols/worker_api/history_batch.hpp"

#include "protocols/common/json_depth.hpp"
#include "protocols/common/json_writer.hpp"
#include "protocols/sql/literals.hpp"
#include "protocols/sql/statements.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <charconv>

namespace qf::worker_api {

namespace {

using nlohmann::json;

/// The record's text members, by their keys in the batch.
template <class Record, class F>
void each_text(Record& r, F f) {
  f("proxyQueryId", r.proxy_query_id);
  f("user", r.user);
  f("source", r.source);
  f("catalog", r.catalog);
  f("schema", r.schema);
  f("clusterGroup", r.cluster_group);
  f("clusterName", r.cluster_name);
  f("engineType", r.engine_type);
  f("protocol", r.protocol);
  f("sql", r.sql);
  f("status", r.status);
  f("errorMessage", r.error_message);
  f("backendQueryId", r.backend_query_id);
  f("externalUrl", r.external_url);
}

template <class Record, class F>
void each_count(Record& r, F f) {
  f("createdAtMs", r.created_at_ms);
  f("startedAtMs", r.started_at_ms);
  f("finishedAtMs", r.finished_at_ms);
  f("queueDurationMs", r.queue_duration_ms);
  f("executionDurationMs", r.execution_duration_ms);
  f("rowsReturned", r.rows_returned);
}

/// Fingerprints travel as decimal text: a JavaScript reader of the same
/// JSON would round a 64-bit number.
template <class Record, class F>
void each_fingerprint(Record& r, F f) {
  f("queryHash", r.query_hash);
  f("queryParameterizedHash", r.query_parameterized_hash);
}

size_t text_limit(std::string_view key) {
  if (key == "sql")
    return 1024 * 1024;
  if (key == "errorMessage")
    return 64 * 1024;
  return 1024;
}

bool known_status(std::string_view s) {
  return s == "Success" || s == "Failed" || s == "Cancelled" || s == "Denied";
}

/// Reads one record; an empty string, or why not.
std::string read_record(const json& doc, query_record& r) {
  if (!doc.is_object())
    return "is not an object";
  std::string why;
  each_text(r, [&](std::string_view key, std::string& out) {
    auto it = doc.find(key);
    if (!why.empty() || it == doc.end() || it->is_null())
      return;
    if (!it->is_string() || it->get_ref<const std::string&>().size() > text_limit(key)) {
      why = std::string{key} + ": expected a string of at most "
            + std::to_string(text_limit(key)) + " bytes";
      return;
    }
    out = it->get<std::string>();
  });
  each_count(r, [&](std::string_view key, int64_t& out) {
    auto it = doc.find(key);
    if (!why.empty() || it == doc.end() || it->is_null())
      return;
    // Up to the end of year 9999, past which PostgreSQL keeps no time.
    constexpr int64_t latest = 253'402'300'799'999;
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > latest) {
      why = std::string{key} + ": expected a whole number from 0 to " + std::to_string(latest);
      return;
    }
    out = it->get<int64_t>();
  });
  each_fingerprint(r, [&](std::string_view key, int64_t& out) {
    auto it = doc.find(key);
    if (!why.empty() || it == doc.end() || it->is_null())
      return;
    const auto* text = it->is_string() ? &it->get_ref<const std::string&>() : nullptr;
    auto [end, ec] = text ? std::from_chars(text->data(), text->data() + text->size(), out)
                          : std::from_chars_result{nullptr, std::errc::invalid_argument};
    if (ec != std::errc{} || end != text->data() + text->size())
      why = std::string{key} + ": expected a 64-bit integer as decimal text";
  });
  if (!why.empty())
    return why;
  if (r.proxy_query_id.empty())
    return "proxyQueryId: required";
  if (r.protocol.empty())
    return "protocol: required";
  if (!known_status(r.status))
    return "status: expected Success, Failed, Cancelled or Denied";
  if (auto it = doc.find("routingTrace"); it != doc.end() && !it->is_null()) {
    if (!it->is_object() && !it->is_array())
      return "routingTrace: expected an object, an array or null";
    r.routing_trace = it->dump(-1, ' ', false, json::error_handler_t::replace);
    if (r.routing_trace.find("\\u0000") != std::string::npos) // jsonb refuses it
      r.routing_trace.clear();
  }
  return {};
}

} // namespace

fingerprints fingerprints_of(const query_record& r) {
  fingerprints f{r.query_hash, r.query_parameterized_hash};
  if (r.sql.empty())
    return f;
  if (f.query == 0)
    f.query = sql::fingerprint(r.sql);
  if (f.parameterized == 0)
    f.parameterized
      = sql::fingerprint(sql::parameterized(r.sql, sql::dialect_of_protocol(r.protocol)));
  return f;
}

void fill_fingerprints(query_record& r) {
  auto f = fingerprints_of(r);
  r.query_hash = f.query;
  r.query_parameterized_hash = f.parameterized;
}

void redact(query_record& r, config::redaction policy) {
  fill_fingerprints(r);
  switch (policy) {
    case config::redaction::full:
      return;
    case config::redaction::mask_literals:
      r.sql = sql::parameterized(r.sql, sql::dialect_of_protocol(r.protocol));
      r.error_message = sql::masked_text(r.error_message);
      return;
    case config::redaction::metadata:
      r.sql.clear();
      r.error_message.clear();
      r.routing_trace.clear();
      return;
  }
}

std::string encode_history_batch(const std::vector<query_record>& records) {
  std::string out = "{\"schemaVersion\":" + std::to_string(history_schema_version)
                    + ",\"records\":[";
  bool first_record = true;
  for (const auto& r : records) {
    if (!std::exchange(first_record, false))
      out += ',';
    out += '{';
    bool first = true;
    auto key = [&](std::string_view k) {
      if (!std::exchange(first, false))
        out += ',';
      json_text::append_string(out, k);
      out += ':';
    };
    each_text(r, [&](std::string_view k, const std::string& v) {
      if (v.empty())
        return;
      key(k);
      // A third of the reader's limit for the short ones: each malformed
      // byte becomes three (U+FFFD) on the way.
      auto limit = k == "sql" ? max_sent_sql_bytes
                   : k == "errorMessage" ? max_sent_error_bytes
                                         : text_limit(k) / 3;
      json_text::append_string(out, sql::preview(v, limit));
    });
    each_count(r, [&](std::string_view k, int64_t v) {
      key(k);
      out += std::to_string(v);
    });
    each_fingerprint(r, [&](std::string_view k, int64_t v) {
      if (v == 0)
        return;
      key(k);
      out += '"' + std::to_string(v) + '"';
    });
    // Ours, so JSON already; checked all the same, since one bad record
    // would have the whole batch refused.
    const auto& trace = r.routing_trace;
    if (!trace.empty() && trace.size() <= max_sent_trace_bytes
        && json_text::nests_within(trace, 6) && json::accept(trace)) {
      key("routingTrace");
      out += trace;
    }
    out += '}';
  }
  return out + "]}";
}

history_batch_outcome decode_history_batch(std::string_view body) {
  history_batch_outcome out;
  if (body.size() > max_history_batch_bytes) {
    out.error = "the batch is larger than 8 MiB";
    return out;
  }
  // A batch, its records, a routing trace and its steps.
  if (!json_text::nests_within(body, 8)) {
    out.error = "the batch nests too deep";
    return out;
  }
  auto doc = json::parse(body, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    out.error = "the batch must be a JSON object";
    return out;
  }
  auto version = doc.find("schemaVersion");
  if (version == doc.end() || !version->is_number_integer()) {
    out.error = "schemaVersion: required, a whole number";
    return out;
  }
  if (version->get<int64_t>() != history_schema_version) {
    out.unsupported_version = true;
    out.error = "schemaVersion " + version->dump() + " is not one this control plane reads ("
                + std::to_string(history_schema_version) + "): upgrade the control plane first";
    return out;
  }
  auto list = doc.find("records");
  if (list == doc.end() || !list->is_array()) {
    out.error = "records: required, an array";
    return out;
  }
  if (list->size() > max_history_records) {
    out.error = "records: at most " + std::to_string(max_history_records) + " in one batch";
    return out;
  }
  std::vector<query_record> records(list->size());
  for (size_t i = 0; i < records.size(); ++i) {
    if (auto why = read_record((*list)[i], records[i]); !why.empty()) {
      out.error = "records[" + std::to_string(i) + "]." + why;
      return out;
    }
  }
  out.records = std::move(records);
  return out;
}

std::string encode(const history_ingest_answer& a) {
  return "{\"accepted\":" + std::to_string(a.accepted)
         + ",\"duplicates\":" + std::to_string(a.duplicates) + "}";
}

std::optional<history_ingest_answer> decode_history_answer(std::string_view body) {
  if (body.size() > 64 * 1024 || !json_text::nests_within(body, 2))
    return std::nullopt;
  auto doc = json::parse(body, nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    return std::nullopt;
  history_ingest_answer a;
  auto count = [&](const char* key, uint64_t& out) {
    auto it = doc.find(key);
    if (it == doc.end() || !it->is_number_unsigned())
      return false;
    out = it->get<uint64_t>();
    return true;
  };
  if (!count("accepted", a.accepted) || !count("duplicates", a.duplicates))
    return std::nullopt;
  return a;
}

} // namespace qf::worker_api
