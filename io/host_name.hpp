// This machine's host name (gethostname), for the names a node gives
// itself: a worker's default name, a control-plane replica's holder name,
// the URL other replicas reach it at.
#pragma once

#include <string>

namespace qf::io {

/// The host name; empty when the system gives none.
std::string host_name();

} // namespace qf::io
