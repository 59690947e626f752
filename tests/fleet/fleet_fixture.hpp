// A fleet test: a database of its own on the PostgreSQL server the test
// command starts (QF_PG_URL), dropped afterwards.
#pragma once

#include "tests/integration/fresh_database.hpp"
#include "tests/support/fleet.hpp"

#include <spdlog/spdlog.h>

namespace qf::test_support {

/// One SQLite cluster `lite` whose table t holds one row, v, in group g
/// (and the clusters of `more`, outside any group).
inline std::string sqlite_fleet(int v, const std::string& more = {}) {
  return "clusters:\n  lite: { engine: sqlite, initSql: [\"CREATE TABLE t AS SELECT "
         + std::to_string(v) + " AS v\"] }\n" + more
         + "clusterGroups:\n  g: { members: [lite], maxRunningQueries: 4 }\n";
}

/// The admin API's body for `lite` with another value in t.
inline std::string lite_with(int v) {
  return R"({"engine": "sqlite", "initSql": ["CREATE TABLE t AS SELECT )" + std::to_string(v)
         + R"( AS v"]})";
}

/// A sample's value in a node's /metrics (the series with its labels, as
/// printed), or -1 when absent.
inline double metric_value(const std::string& host, uint16_t port, const std::string& series) {
  auto text = http_request("GET", "http://" + host + ":" + std::to_string(port) + "/metrics").body;
  auto at = text.find("\n" + series + " ");
  return at == std::string::npos ? -1 : std::stod(text.substr(at + series.size() + 2));
}

/// A worker that, without its control plane, admits on its own limits
/// (onUnavailable: localLimits): the config tests' workers, which serve
/// queries while the control plane is away. With the default, failClosed,
/// an idle worker would hold no lease to run them on.
inline worker_options worker_on_own_limits(std::string name, uint32_t heartbeat_interval_secs) {
  auto w = worker_named(std::move(name), heartbeat_interval_secs);
  w.node_yaml = "coordination: { mode: controlPlane, onUnavailable: localLimits }\n";
  return w;
}

class fleet_test : public fresh_database {
protected:
  void SetUp() override {
    spdlog::set_level(getenv("QF_TEST_LOG_INFO") ? spdlog::level::info : spdlog::level::warn); // fifty nodes log a lot
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
