// spdlog setup: level and text or JSON lines on stderr.
#pragma once

#include <string>

namespace qf::logging {

/// Returns false when level or format is not a known name.
bool setup(const std::string& level, const std::string& format);

} // namespace qf::logging
