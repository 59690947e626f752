// How many connections a listener may hold by default: as many as the
// process's descriptors allow, with room left for everything else.
#pragma once

#include <cstdint>

namespace qf::io {

/// Raises the soft RLIMIT_NOFILE to the hard one (as Go's runtime and
/// nginx's worker_rlimit_nofile do; idempotent) and returns a listener's
/// default maxConnections: half the descriptors past 256 kept for
/// backends, files and the engines, from 64 to 100,000.
uint32_t default_connection_limit();

/// The same for a given soft limit.
uint32_t connection_limit_for(uint64_t descriptors);

} // namespace qf::io
