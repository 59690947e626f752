// What a statement's state looks like to its clients: the Trino state it
// shows, its URIs, the rows of its next page, its QueryInfo. Plain
// functions over statement_state, used by the statement actor.
#pragma once

#include "actors/data/statement.hpp"

namespace qf {

/// The state a page shows; a finished query shows RUNNING until its last
/// page (`final`).
trino::query_state public_state(const statement_state& st, bool final);

/// The statement's URI under `path` ("/v1/query/"), on its base address.
std::string uri(const statement_state& st, std::string_view path);

/// Moves up to max rows out of the buffer into one batch.
row_batch take_rows(statement_state& st, size_t max);

/// GET /v1/query/{id}: Trino's QueryInfo, as far as it applies.
std::string query_info(const statement_state& st);

} // namespace qf
