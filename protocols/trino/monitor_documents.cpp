#include "protocols/trino/monitor_documents.hpp"

#include "protocols/common/json_depth.hpp"

#include <nlohmann/json.hpp>

#include <cctype>
#include <cmath>
#include <cstdlib>

namespace qf::trino {

namespace {

bool name_char(char c, bool first) {
  auto u = static_cast<unsigned char>(c);
  return std::isalpha(u) || c == '_' || c == ':' || (!first && std::isdigit(u));
}

/// Prometheus' value forms: a float, NaN, +Inf, -Inf.
std::optional<double> value_of(std::string_view text) {
  if (text == "NaN")
    return std::nan("");
  if (text == "+Inf" || text == "Inf")
    return HUGE_VAL;
  if (text == "-Inf")
    return -HUGE_VAL;
  if (text.empty() || text.size() > 64)
    return std::nullopt;
  std::string copy{text}; // strtod needs a terminator
  char* end = nullptr;
  auto v = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size())
    return std::nullopt;
  return v;
}

} // namespace

std::optional<std::map<std::string, double>> parse_jmx_attributes(std::string_view body) {
  if (!json_text::nests_within(body, 32))
    return std::nullopt;
  auto doc = nlohmann::json::parse(body, nullptr, false);
  if (!doc.is_object())
    return std::nullopt;
  auto attributes = doc.find("attributes");
  if (attributes == doc.end() || !attributes->is_array())
    return std::nullopt;
  std::map<std::string, double> out;
  for (const auto& a : *attributes) {
    if (!a.is_object())
      continue;
    auto name = a.find("name");
    auto value = a.find("value");
    if (name == a.end() || value == a.end() || !name->is_string() || !value->is_number())
      continue;
    out[name->get<std::string>()] = value->get<double>();
  }
  return out;
}

std::map<std::string, double> parse_prometheus_text(std::string_view body, size_t max_names) {
  std::map<std::string, double> out;
  std::map<std::string, bool> labelled; // whether the kept sample had labels
  while (!body.empty()) {
    auto eol = body.find('\n');
    auto line = body.substr(0, eol);
    body = eol == std::string_view::npos ? std::string_view{} : body.substr(eol + 1);
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    if (line.empty() || line.front() == '#')
      continue;
    size_t i = 0;
    while (i < line.size() && name_char(line[i], i == 0))
      ++i;
    if (i == 0)
      continue;
    std::string name{line.substr(0, i)};
    bool has_labels = i < line.size() && line[i] == '{';
    if (has_labels) {
      // Label values may hold '}' inside quotes.
      bool quoted = false;
      for (++i; i < line.size(); ++i) {
        if (quoted && line[i] == '\\')
          ++i;
        else if (line[i] == '"')
          quoted = !quoted;
        else if (!quoted && line[i] == '}')
          break;
      }
      if (i >= line.size())
        continue;
      ++i;
    }
    auto rest = line.substr(i);
    auto start = rest.find_first_not_of(" \t");
    if (start == std::string_view::npos)
      continue;
    rest = rest.substr(start);
    auto value = value_of(rest.substr(0, rest.find_first_of(" \t")));
    if (!value)
      continue;
    auto kept = labelled.find(name);
    if (kept == labelled.end()) {
      if (out.size() >= max_names)
        continue;
      out[name] = *value;
      labelled[name] = has_labels;
    } else if (kept->second && !has_labels) {
      out[name] = *value;
      kept->second = false;
    }
  }
  return out;
}

} // namespace qf::trino
