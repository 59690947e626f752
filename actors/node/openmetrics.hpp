// The OpenMetrics text format (what Prometheus asks for first, with
// Accept: application/openmetrics-text): prometheus-cpp writes only the
// classic one. A counter's family is named without its _total, samples
// are typed to their family, the text ends with # EOF.
#pragma once

#include <prometheus/metric_family.h>

#include <string>
#include <vector>

namespace qf {

std::string render_openmetrics(const std::vector<prometheus::MetricFamily>& families);

} // namespace qf
