#include "protocols/worker_api/worker_report.hpp"

#include "protocols/common/json_depth.hpp"

#include <nlohmann/json.hpp>

namespace qf::worker_api {

namespace {

using nlohmann::json;

constexpr size_t max_labels = 64;
constexpr size_t max_label_key = 317; // a prefix of 253, '/', a name of 63
constexpr size_t max_label_value = 1024;
constexpr size_t max_text = 16 * 1024;

/// An optional string member; false when present but not a string (or
/// too long).
bool read_string(const json& doc, const char* key, std::string& out, size_t max = max_text) {
  auto it = doc.find(key);
  if (it == doc.end() || it->is_null())
    return true;
  if (!it->is_string() || it->get_ref<const std::string&>().size() > max)
    return false;
  out = it->get<std::string>();
  return true;
}

bool one_of(const std::string& s, std::initializer_list<std::string_view> allowed) {
  for (auto a : allowed)
    if (s == a)
      return true;
  return false;
}

} // namespace

bool valid_worker_name(std::string_view name) {
  if (name.empty() || name.size() > 253)
    return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.')
      return false;
  return true;
}

std::string encode(const worker_report& r) {
  auto optional = [](const std::string& s) { return s.empty() ? json(nullptr) : json(s); };
  json doc = {{"name", r.name},
              {"labels", r.labels},
              {"version", r.version},
              {"incarnation", r.incarnation},
              {"downloadedRevision", optional(r.downloaded_revision)},
              {"activeRevision", optional(r.active_revision)},
              {"lastError", optional(r.last_error)},
              {"coordinationMode", r.coordination_mode},
              {"configSource", optional(r.config_source)},
              {"status", r.status},
              {"heartbeatIntervalSecs", r.heartbeat_interval_secs}};
  // A worker's error text may hold any bytes an engine sent: never throw.
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

report_outcome decode_report(std::string_view body) {
  report_outcome out;
  auto fail = [&](std::string why) {
    out.error = std::move(why);
    return out;
  };
  if (body.size() > max_report_bytes)
    return fail("the report is larger than " + std::to_string(max_report_bytes) + " bytes");
  if (!json_text::nests_within(body, 4))
    return fail("the report nests too deep");
  auto doc = json::parse(body, nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    return fail("the report must be a JSON object");
  worker_report r;
  if (!read_string(doc, "name", r.name) || !valid_worker_name(r.name))
    return fail("name: expected 1 to 253 letters, digits, '-', '_' or '.'");
  if (auto labels = doc.find("labels"); labels != doc.end() && !labels->is_null()) {
    if (!labels->is_object() || labels->size() > max_labels)
      return fail("labels: expected an object of at most 64 string values");
    for (const auto& [key, value] : labels->items()) {
      if (key.empty() || key.size() > max_label_key || !value.is_string()
          || value.get_ref<const std::string&>().size() > max_label_value)
        return fail("labels." + key.substr(0, 64) + ": expected a string");
      r.labels[key] = value.get<std::string>();
    }
  }
  if (!read_string(doc, "version", r.version, 128) || r.version.empty())
    return fail("version: expected the worker's version");
  if (!read_string(doc, "incarnation", r.incarnation, 128))
    return fail("incarnation: expected a string");
  if (!read_string(doc, "downloadedRevision", r.downloaded_revision, 128)
      || !read_string(doc, "activeRevision", r.active_revision, 128))
    return fail("downloadedRevision and activeRevision: expected revisions or null");
  if (!read_string(doc, "lastError", r.last_error))
    return fail("lastError: expected a string of at most 16 KiB, or null");
  if (!read_string(doc, "coordinationMode", r.coordination_mode)
      || !one_of(r.coordination_mode, {"controlPlane", "local"}))
    return fail("coordinationMode: expected controlPlane or local");
  if (!read_string(doc, "configSource", r.config_source)
      || !one_of(r.config_source, {"", "controlPlane", "peer"}))
    return fail("configSource: expected controlPlane, peer or null");
  if (!read_string(doc, "status", r.status) || !one_of(r.status, {"active", "draining"}))
    return fail("status: expected active or draining");
  if (auto i = doc.find("heartbeatIntervalSecs"); i != doc.end()) {
    if (!i->is_number_unsigned() || i->get<uint64_t>() < 1 || i->get<uint64_t>() > 3600)
      return fail("heartbeatIntervalSecs: expected 1 to 3600");
    r.heartbeat_interval_secs = static_cast<uint32_t>(i->get<uint64_t>());
  }
  out.report = std::move(r);
  return out;
}

labels_outcome parse_labels_file(std::string_view text) {
  labels_outcome out;
  size_t number = 0;
  while (!text.empty()) {
    auto end = text.find('\n');
    auto line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    ++number;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' '))
      line.remove_suffix(1);
    if (line.empty())
      continue;
    auto problem = [&](const std::string& what) {
      out.problems.push_back("line " + std::to_string(number) + ": " + what);
    };
    auto eq = line.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      problem("expected key=\"value\"");
      continue;
    }
    auto key = std::string{line.substr(0, eq)};
    auto quoted = line.substr(eq + 1);
    if (quoted.size() < 2 || quoted.front() != '"' || quoted.back() != '"') {
      problem("the value of " + key + " is not quoted");
      continue;
    }
    std::string value;
    bool ok = true;
    for (size_t i = 1; i + 1 < quoted.size(); ++i) {
      char c = quoted[i];
      if (c != '\\') {
        ok = ok && c != '"';
        value += c;
        continue;
      }
      if (i + 2 >= quoted.size()) {
        ok = false;
        break;
      }
      switch (quoted[++i]) {
        case '"':
          value += '"';
          break;
        case '\\':
          value += '\\';
          break;
        case 'n':
          value += '\n';
          break;
        case 't':
          value += '\t';
          break;
        default:
          ok = false;
      }
    }
    if (!ok)
      problem("the value of " + key + " is not a quoted string");
    else
      out.labels[key] = std::move(value);
  }
  return out;
}

} // namespace qf::worker_api
