// The fast lane's connection pools, by name, for headers that only hold
// one (engines/lane_pool.hpp has the template).
#pragma once

#include <string>

namespace qf::engines {

template <class Connection, class Target>
class lane_pool;
class pg_async_connection;
class mysql_async_connection;
struct mysql_target;

/// Opened with a libpq conninfo string.
using pg_lane_pool = lane_pool<pg_async_connection, std::string>;
using mysql_lane_pool = lane_pool<mysql_async_connection, mysql_target>;

} // namespace qf::engines
