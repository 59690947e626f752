// Fuzzes what a worker's history passes through: the control plane's
// reader of a batch (any bytes: a refusal or records, never a crash), and
// the literal masking of every dialect, whose digest is hardly longer than
// the text and reads the same when digested again.
#include "protocols/sql/literals.hpp"
#include "protocols/worker_api/history_batch.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto text = std::string_view{reinterpret_cast<const char*>(data), size};
  auto batch = qf::worker_api::decode_history_batch(text);
  if (batch.records) {
    if (batch.records->size() > qf::worker_api::max_history_records)
      std::abort();
    // What was read is written again and read back the same.
    for (auto& r : *batch.records)
      qf::worker_api::redact(r, qf::config::redaction::mask_literals);
    auto again = qf::worker_api::decode_history_batch(
      qf::worker_api::encode_history_batch(*batch.records));
    if (!again.records || again.records->size() != batch.records->size())
      std::abort();
  }
  for (auto d : {qf::sql::dialect::postgres, qf::sql::dialect::mysql, qf::sql::dialect::trino}) {
    auto digest = qf::sql::parameterized(text, d);
    // MySQL's minus signs side by side are set apart ("1--1": "?- -?").
    if (digest.size() > 2 * text.size() + 1
        || qf::sql::parameterized(digest, d) != digest)
      std::abort();
  }
  if (qf::sql::masked_text(text).size() > text.size())
    std::abort();
  (void)qf::worker_api::decode_history_answer(text);
  return 0;
}
