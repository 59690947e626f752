// The HISTORY STORE actor, in-memory flavour: a bounded ring of finished
// query records, newest first, searchable for GET /admin/queries.
#pragma once

#include "actors/core/messages.hpp"

#include <caf/stateful_actor.hpp>

#include <deque>
#include <unordered_set>

namespace qf {

struct history_store_state {
  static inline const char* name = "history-store";
  size_t capacity = 10000;
  std::deque<query_record> records; // newest at the front
  std::unordered_set<std::string> ids; // of the records kept
};

/// Handlers:
/// - (record, query_record): keeps it; the first record of an id wins;
/// - (list, history_filter) -> std::string JSON {"total":N,"queries":[...]};
/// - (get, id) -> std::string JSON of one record, or errc not_found.
caf::behavior history_store(caf::stateful_actor<history_store_state>* self,
                            size_t capacity);

/// The JSON object of one record (camelCase keys).
std::string to_json(const query_record& r);

} // namespace qf
