// Names of the config enums as the YAML spells them.
#include "protocols/config/model.hpp"

namespace qf::config {

std::string_view to_string(protocol p) {
  switch (p) {
    case protocol::trino_http:
      return "trinoHttp";
    case protocol::postgres_wire:
      return "postgresWire";
    case protocol::mysql_wire:
      return "mysqlWire";
    case protocol::flight_sql:
      return "flightSql";
  }
  return "unknown";
}

std::optional<protocol> protocol_from_string(std::string_view name) {
  for (auto p : {protocol::trino_http, protocol::postgres_wire,
                 protocol::mysql_wire, protocol::flight_sql})
    if (to_string(p) == name)
      return p;
  return std::nullopt;
}

std::string_view to_string(engine_kind e) {
  switch (e) {
    case engine_kind::duck_db:
      return "duckDb";
    case engine_kind::sqlite:
      return "sqlite";
    case engine_kind::postgres:
      return "postgres";
    case engine_kind::mysql:
      return "mysql";
    case engine_kind::trino:
      return "trino";
  }
  return "unknown";
}

std::string_view to_string(strategy_kind s) {
  switch (s) {
    case strategy_kind::round_robin:
      return "roundRobin";
    case strategy_kind::least_loaded:
      return "leastLoaded";
    case strategy_kind::random:
      return "random";
    case strategy_kind::failover:
      return "failover";
    case strategy_kind::query_count_based:
      return "queryCountBased";
  }
  return "unknown";
}

std::string_view to_string(monitor_type t) {
  switch (t) {
    case monitor_type::info_api:
      return "INFO_API";
    case monitor_type::jdbc:
      return "JDBC";
    case monitor_type::jmx:
      return "JMX";
    case monitor_type::metrics:
      return "METRICS";
    case monitor_type::noop:
      return "NOOP";
  }
  return "unknown";
}

std::optional<monitor_type> monitor_type_from_string(std::string_view name) {
  for (auto t : {monitor_type::info_api, monitor_type::jdbc, monitor_type::jmx,
                 monitor_type::metrics, monitor_type::noop})
    if (to_string(t) == name)
      return t;
  return std::nullopt;
}

const cluster* gateway_config::find_cluster(std::string_view name) const {
  for (const auto& c : clusters)
    if (c.name == name)
      return &c;
  return nullptr;
}

const cluster_group* gateway_config::find_group(std::string_view name) const {
  for (const auto& g : groups)
    if (g.name == name)
      return &g;
  return nullptr;
}

std::string_view to_string(redaction r) {
  switch (r) {
    case redaction::full:
      return "full";
    case redaction::mask_literals:
      return "maskLiterals";
    case redaction::metadata:
      return "metadata";
  }
  return "full";
}

std::optional<redaction> redaction_from_string(std::string_view name) {
  for (auto r : {redaction::full, redaction::mask_literals, redaction::metadata})
    if (to_string(r) == name)
      return r;
  return std::nullopt;
}

std::string_view to_string(coordination_mode m) {
  return m == coordination_mode::local ? "local" : "controlPlane";
}

} // namespace qf::config
