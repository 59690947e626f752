// How a wire session reads a statement actor: fetch a page, hand it to the
// session's callback, fetch again while the callback says so. A failed
// request arrives as a failed page, so callers have one path for errors.
#pragma once

#include "actors/core/messages.hpp"

#include <caf/event_based_actor.hpp>

namespace qf {

inline constexpr uint32_t rows_per_fetch = 4096;

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
