// Brings a PostgreSQL database to the schema this binary knows, with the
// embedded migrations, recorded in a ledger table. Forward-only: a database
// migrated past what this binary knows is refused, never touched. Blocking:
// the CLI calls it before the node starts.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace qf::migrator {

/// Why the database cannot be brought up to date; the message is for the
/// operator, as is.
class migration_error : public std::runtime_error {
public:
  explicit migration_error(const std::string& what, bool unreachable = false)
    : std::runtime_error(what), unreachable_(unreachable) {
    // nop
  }

  /// The database could not be reached at all (worth waiting for).
  bool unreachable() const {
    return unreachable_;
  }

private:
  bool unreachable_;
};

struct report {
  std::vector<int> applied; // versions applied by this call, in order
  int version = 0;          // the database's version afterwards
};

/// The newest version this binary knows.
int latest_version();

/// Applies the missing migrations up to `target` (default: all), each in
/// its own transaction, under an advisory lock so that two processes never
/// migrate at once. Throws migration_error.
report migrate(const std::string& url, int target = latest_version());

/// The database's version without changing anything; throws migration_error
/// when it is newer than this binary or a ledger entry was altered.
report check(const std::string& url);

} // namespace qf::migrator
