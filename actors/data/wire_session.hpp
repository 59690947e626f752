// How a wire session actor (MySQL's; PostgreSQL's session is not an actor,
// see net/boundary/pg_wire_session) drives its sans-IO `session` (events
// in, bytes out) over the socket's `io` and its running `statement` actor.
#pragma once

#include "actors/core/messages.hpp"

#include <caf/event_based_actor.hpp>

namespace qf {

inline constexpr uint32_t rows_per_fetch = 4096;

/// Sends what the state machine wrote to the client.
template <class Self>
void flush_output(Self* self) {
  auto out = self->state.session->take_output();
  if (!out.empty())
    self->state.io.write(std::move(out));
}

/// Hands the state machine's events to handle while no statement runs,
/// sends the output, then closes, or reads more input when idle (a busy
/// session reads nothing, so a fast client cannot queue without bound).
template <class Self, class Handle>
void pump_events(Self* self, Handle handle) {
  auto& st = self->state;
  while (!st.statement) {
    auto ev = st.session->next_event();
    if (!ev)
      break;
    handle(*ev);
  }
  flush_output(self);
  if (st.session->closing()) {
    st.io.close();
    self->quit();
    return;
  }
  if (!st.statement)
    st.io.read_more();
}

/// Reads a statement actor: fetch a page, hand it to the session's
/// callback, fetch again while the callback says so. A failed request
/// arrives as a failed page, so callers have one path for errors.
/// on_page(statement_page&) -> bool: true to fetch the next page.
template <class Self, class OnPage>
void pull_pages(Self* self, caf::actor statement, OnPage on_page) {
  self->request(statement, caf::infinite, atom::fetch::value, rows_per_fetch)
    .then(
      [self, statement, on_page](statement_page& page) {
        if (on_page(page))
          pull_pages(self, statement, on_page);
      },
      [on_page](caf::error& err) {
        statement_page page;
        page.failed = true;
        page.error_message = message_of(err);
        on_page(page);
      });
}

} // namespace qf
