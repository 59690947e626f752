// The control plane's own connections to PostgreSQL must neither hang on a
// dead network (libpq waits for the OS TCP timeout by default, minutes) nor
// on a stuck statement. Keys the operator set in the URL are kept.
#pragma once

#include <string>

namespace qf {

/// url with connect_timeout=10 added, and with statement_timeout (in ms;
/// 0 leaves it out, as migrations that build indexes need) as a server
/// option.
std::string with_timeouts(const std::string& url, int statement_timeout_ms = 60'000);

} // namespace qf
