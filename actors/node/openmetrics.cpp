#include "actors/node/openmetrics.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <utility>

namespace qf {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricType;

/// A label value or help text with \, " (labels only) and newlines escaped.
void append_escaped(std::string& out, std::string_view s, bool quotes) {
  for (char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '"' && quotes)
      out += "\\\"";
    else
      out += c;
  }
}

void append_number(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
  } else if (v == std::floor(v) && std::fabs(v) < 1e15) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", v);
    out += buf;
  } else {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    out += buf;
  }
}

/// name{labels[,extra="value"]} value
void append_sample(std::string& out, std::string_view name, const ClientMetric& m, double value,
                   std::string_view extra_label = {}, std::string_view extra_value = {}) {
  out += name;
  if (!m.label.empty() || !extra_label.empty()) {
    out += '{';
    bool first = true;
    for (const auto& l : m.label) {
      if (!std::exchange(first, false))
        out += ',';
      out += l.name;
      out += "=\"";
      append_escaped(out, l.value, true);
      out += '"';
    }
    if (!extra_label.empty()) {
      if (!first)
        out += ',';
      out += extra_label;
      out += "=\"";
      out += extra_value;
      out += '"';
    }
    out += '}';
  }
  out += ' ';
  append_number(out, value);
  out += '\n';
}

/// A bucket's bound or a quantile in canonical form: "1.0", "0.25", "+Inf".
std::string bound_text(double bound) {
  std::string s;
  if (!std::isfinite(bound)) {
    append_number(s, bound);
    return s;
  }
  if (bound == std::floor(bound) && std::fabs(bound) < 1e15) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", bound);
    return buf;
  }
  // The shortest text that reads back as the same double: 0.05, not
  // 0.050000000000000003 (a bucket's series must keep its le).
  char buf[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, bound);
    if (std::strtod(buf, nullptr) == bound)
      break;
  }
  return buf;
}

std::string_view type_name(MetricType t) {
  switch (t) {
    case MetricType::Counter:
      return "counter";
    case MetricType::Gauge:
      return "gauge";
    case MetricType::Summary:
      return "summary";
    case MetricType::Histogram:
      return "histogram";
    default:
      return "unknown";
  }
}

} // namespace

std::string render_openmetrics(const std::vector<prometheus::MetricFamily>& families) {
  std::string out;
  for (const auto& f : families) {
    std::string_view name = f.name;
    if (f.type == MetricType::Counter && name.size() > 6 && name.ends_with("_total"))
      name.remove_suffix(6);
    out += "# TYPE ";
    out += name;
    out += ' ';
    out += type_name(f.type);
    out += '\n';
    if (!f.help.empty()) {
      out += "# HELP ";
      out += name;
      out += ' ';
      append_escaped(out, f.help, false);
      out += '\n';
    }
    const std::string base{name};
    for (const auto& m : f.metric) {
      switch (f.type) {
        case MetricType::Counter:
          append_sample(out, base + "_total", m, m.counter.value);
          break;
        case MetricType::Gauge:
          append_sample(out, base, m, m.gauge.value);
          break;
        case MetricType::Histogram:
          for (const auto& b : m.histogram.bucket)
            append_sample(out, base + "_bucket", m, static_cast<double>(b.cumulative_count), "le",
                          bound_text(b.upper_bound));
          append_sample(out, base + "_count", m, static_cast<double>(m.histogram.sample_count));
          append_sample(out, base + "_sum", m, m.histogram.sample_sum);
          break;
        case MetricType::Summary:
          for (const auto& q : m.summary.quantile)
            append_sample(out, base, m, q.value, "quantile", bound_text(q.quantile));
          append_sample(out, base + "_count", m, static_cast<double>(m.summary.sample_count));
          append_sample(out, base + "_sum", m, m.summary.sample_sum);
          break;
        default:
          append_sample(out, base, m, m.untyped.value);
      }
    }
  }
  out += "# EOF\n";
  return out;
}

} // namespace qf
