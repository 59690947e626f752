// MySQL and MariaDB clusters (MariaDB Connector/C, streamed text results).
#pragma once

#include "engines/engine.hpp"

#include <optional>
#include <string_view>

namespace qf::engines {

struct mysql_target {
  std::string host;
  unsigned port = 0; // 0: the default, 3306
  std::string database;
  std::string user;
  std::string password;
  unsigned connect_timeout_s = static_cast<unsigned>(connect_timeout.count());
};

/// mysql://user:password@host:port/database, percent-decoded; nullopt when
/// the text is not such a URL.
std::optional<mysql_target> parse_mysql_url(std::string_view url);

/// The cluster's server: its endpoint URL, or its fields; port 3306 unless
/// given. Throws engine_error for an endpoint that is not a mysql:// URL.
mysql_target mysql_target_of(const config::cluster& cfg);

std::shared_ptr<database> open_mysql(const config::cluster& cfg);

} // namespace qf::engines
