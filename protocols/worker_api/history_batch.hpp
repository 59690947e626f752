// A worker's query history on its way upstream (POST /worker/query-records,
// or a history endpoint): the batch a worker sends, the redaction applied
// before a record leaves it, and the control plane's answer. Versioned by
// schemaVersion: a control plane refuses a version it does not know, and
// the worker keeps those records. Pure: no sockets, no clock.
#pragma once

#include "protocols/common/query_record.hpp"
#include "protocols/config/model.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qf::worker_api {

constexpr int history_schema_version = 1;
/// At most this many records in one batch, ...
constexpr size_t max_history_records = 200;
/// ... and at most this many bytes (413 beyond).
constexpr size_t max_history_batch_bytes = 8 * 1024 * 1024;
/// What a record's texts are cut to before they leave a worker, so that a
/// full batch stays well under the limit. query_records keeps 16 KiB of a
/// statement's SQL.
constexpr size_t max_sent_sql_bytes = 16 * 1024;
constexpr size_t max_sent_error_bytes = 8 * 1024;
constexpr size_t max_sent_trace_bytes = 8 * 1024;

/// The record as it may leave its worker under `policy`:
/// - full: everything;
/// - maskLiterals: the SQL replaced by its parameterized digest, literals
///   masked in the error message;
/// - metadata: no SQL, no error text, no routing trace.
/// Fingerprints are filled first (from the SQL as it ran), so every mode
/// keeps them.
void redact(query_record& r, config::redaction policy);

struct fingerprints {
  int64_t query = 0;
  int64_t parameterized = 0;
};

/// The record's query_hash and query_parameterized_hash, computed from
/// its SQL in its frontend's dialect where they are 0 (and stay 0 without
/// SQL).
fingerprints fingerprints_of(const query_record& r);
/// The same, kept in the record.
void fill_fingerprints(query_record& r);

/// {"schemaVersion":1,"records":[...]}; texts cut as above. The worker
/// name is not part of it: the control plane takes it from the caller.
std::string encode_history_batch(const std::vector<query_record>& records);

struct history_batch_outcome {
  std::optional<std::vector<query_record>> records;
  std::string error;
  /// The body was well formed but of a schemaVersion this build does not
  /// read: the sender should keep its records for a newer control plane.
  bool unsupported_version = false;
};

/// Reads a batch: nothing half-read, one bad record refuses the whole of
/// it (the error names the record by its place). A record's `worker`, if
/// any, is ignored.
history_batch_outcome decode_history_batch(std::string_view body);

struct history_ingest_answer {
  uint64_t accepted = 0;   // stored now
  uint64_t duplicates = 0; // already stored (a retried batch)
};

std::string encode(const history_ingest_answer& a);
/// The answer of a control plane; nullopt when the body is not one (a
/// history endpoint of another kind may answer anything with its 2xx).
std::optional<history_ingest_answer> decode_history_answer(std::string_view body);

} // namespace qf::worker_api
