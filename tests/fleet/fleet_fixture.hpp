// A fleet test: a database of its own on the PostgreSQL server the test
// command starts (QF_PG_URL), dropped afterwards.
#pragma once

#include "tests/integration/fresh_database.hpp"
#include "tests/support/fleet.hpp"

#include <spdlog/spdlog.h>

namespace qf::test_support {

class fleet_test : public fresh_database {
protected:
  void SetUp() override {
    spdlog::set_level(spdlog::level::warn); // fifty nodes log a lot
    fresh_database::SetUp();
  }

  /// Worker i's active revision, "" until it has one.
  static std::string active(fleet& f, size_t i) {
    auto s = f.status(i);
    return s.contains("activeRevision") && s["activeRevision"].is_string()
             ? s["activeRevision"].get<std::string>()
             : "";
  }

  /// Whether every worker runs `revision`.
  static bool all_run(fleet& f, const std::string& revision) {
    for (size_t i = 0; i < f.size(); ++i)
      if (active(f, i) != revision)
        return false;
    return true;
  }
};

} // namespace qf::test_support
