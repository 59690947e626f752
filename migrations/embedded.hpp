// The database migrations, embedded into the binary at build time from
// migrations/V<n>__<name>.sql (embed.cmake checks they run 1, 2, 3...).
#pragma once

#include <string_view>
#include <vector>

namespace qf::migrations {

struct migration {
  int version;
  std::string_view name;
  std::string_view sql;
};

/// Every migration, in version order; version i + 1 at index i.
const std::vector<migration>& all();

} // namespace qf::migrations
