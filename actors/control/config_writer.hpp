// The CONFIG WRITER: admin changes to the fleet, written to PostgreSQL
// first and applied to the running node after (detached: libpqxx blocks).
// If the database refuses, nothing changes and the caller hears why.
#pragma once

#include "actors/core/messages.hpp"

#include <caf/fwd.hpp>

#include <functional>
#include <string>

namespace qf {

/// Applies a change to the running node; false when it cannot.
using apply_change = std::function<bool()>;

/// Handler: (activate, name, bool on, apply_change, admin_respond): stores
/// the cluster's active flag (bumping the config revision), then applies;
/// when applying fails the database change is reverted. Answers 200, 404
/// (no such cluster in the database), 500 or 503, with a plain message.
caf::behavior config_writer(caf::event_based_actor*, std::string url);

} // namespace qf

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(qf::apply_change)
