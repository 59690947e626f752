// What Trino's monitoring endpoints answer, read for health checks: a JMX
// MBean (/v1/jmx/mbean/<name>) and Prometheus text (/metrics). Pure; any
// bytes are read or refused, never a crash.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace qf::trino {

/// The numeric attributes of an MBean document ({"attributes": [{"name":
/// ..., "value": ...}, ...]}); nullopt when it is not one.
std::optional<std::map<std::string, double>> parse_jmx_attributes(std::string_view body);

/// Samples of Prometheus text exposition (and OpenMetrics) by metric
/// name: a sample without labels wins over labelled ones of the name,
/// else the first. Lines that are not samples are skipped; at most
/// `max_names` names are kept.
std::map<std::string, double> parse_prometheus_text(std::string_view body,
                                                    size_t max_names = 100'000);

} // namespace qf::trino
