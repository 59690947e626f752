// The REVISION LISTENER (control plane): LISTENs on the config revision's
// channel (V8's trigger NOTIFYs on every change, from any replica) and tells
// the config writer at once, so that a change made through one replica
// reaches the others, and their workers' long polls, in milliseconds rather
// than at the next configReloadIntervalSecs. Detached: it waits on libpq's
// socket a quarter second at a time, reading its mailbox in between.
#pragma once

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include <string>

namespace qf {

/// Handlers: (tick) INTERNAL, one wait on the socket. Sends (changed) to
/// `writer` for each notification, and once after each (re)connect, since
/// a change may have come while it was not listening.
caf::behavior revision_listener(caf::event_based_actor* self, std::string url,
                                caf::actor writer);

} // namespace qf
