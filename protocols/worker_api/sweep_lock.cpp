#include "protocols/worker_api/sweep_lock.hpp"

#include "protocols/common/json_depth.hpp"
#include "protocols/worker_api/json_fields.hpp"
#include "protocols/worker_api/worker_report.hpp"

#include <nlohmann/json.hpp>

#include <cctype>

#include <set>

namespace qf::worker_api {

namespace {

using nlohmann::json;

constexpr uint64_t max_running = 1'000'000;
using fields::read_uint;
using fields::read_name;

bool valid_lock_name(std::string_view s) {
  if (s.empty() || s.size() > 128)
    return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'))
      return false;
  return true;
}

json counts_json(const std::vector<engine_count>& counts, bool answer) {
  json list = json::array();
  for (const auto& c : counts) {
    json e = {{"cluster", c.cluster}, {"running", c.running}};
    if (answer) {
      e["publisher"] = c.publisher;
      e["ageMs"] = c.age_ms;
    }
    list.push_back(std::move(e));
  }
  return list;
}

std::string dump(const json& doc) {
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

/// The counts list of a publish (answer: false) or of an answer.
std::optional<std::vector<engine_count>> read_counts(const json& doc, bool answer,
                                                     std::string& error) {
  auto list = doc.find("counts");
  if (list == doc.end() || !list->is_array() || list->size() > max_engine_counts) {
    error = "counts: expected an array of at most 1024 items";
    return std::nullopt;
  }
  std::vector<engine_count> out;
  std::set<std::string> seen;
  uint64_t n = 0;
  for (size_t i = 0; i < list->size(); ++i) {
    const auto& e = (*list)[i];
    auto where = "counts[" + std::to_string(i) + "]";
    engine_count c;
    if (!e.is_object() || !read_name(e, "cluster", c.cluster)) {
      error = where + ".cluster: expected a cluster's name";
      return std::nullopt;
    }
    if (!read_uint(e, "running", 0, max_running, n)) {
      error = where + ".running: expected 0 to 1000000";
      return std::nullopt;
    }
    c.running = static_cast<uint32_t>(n);
    if (answer) {
      if (!read_name(e, "publisher", c.publisher)
          || !read_uint(e, "ageMs", 0, uint64_t{1} << 62, c.age_ms)) {
        error = where + ": expected its publisher and ageMs";
        return std::nullopt;
      }
    }
    if (!seen.insert(c.cluster).second) {
      error = where + ".cluster: " + c.cluster + " is listed twice";
      return std::nullopt;
    }
    out.push_back(std::move(c));
  }
  return out;
}

} // namespace

std::string_view to_string(sweep_verb v) {
  switch (v) {
    case sweep_verb::acquire:
      return "acquire";
    case sweep_verb::release:
      return "release";
    case sweep_verb::publish:
      return "publish";
    case sweep_verb::counts:
      return "counts";
  }
  return "acquire";
}

std::optional<sweep_verb> sweep_verb_named(std::string_view s) {
  for (auto v : {sweep_verb::acquire, sweep_verb::release, sweep_verb::publish,
                 sweep_verb::counts})
    if (s == to_string(v))
      return v;
  return std::nullopt;
}

std::string encode(sweep_verb v, const sweep_call& c) {
  json doc = {{"name", c.name}, {"holder", c.holder}};
  if (v == sweep_verb::acquire)
    doc["ttlSecs"] = c.ttl_secs;
  else
    doc["token"] = c.token;
  if (v == sweep_verb::publish)
    doc["counts"] = counts_json(c.counts, false);
  return dump(doc);
}

sweep_call_outcome decode_sweep_call(sweep_verb v, std::string_view body) {
  sweep_call_outcome out;
  auto fail = [&](std::string why) {
    out.error = std::move(why);
    return out;
  };
  if (v == sweep_verb::counts)
    return fail("counts takes no body: GET /worker/sweep-lock/counts?name=...");
  json doc;
  if (std::string error; !fields::parse_object(body, max_sweep_call_bytes, doc, error))
    return fail(std::move(error));
  sweep_call c;
  if (!read_name(doc, "name", c.name) || !valid_lock_name(c.name))
    return fail("name: expected a lock's name (letters, digits, '.', '_', '-'; at most 128)");
  if (!read_name(doc, "holder", c.holder) || !valid_worker_name(c.holder))
    return fail("holder: expected the name of the node asking");
  uint64_t n = 0;
  if (v == sweep_verb::acquire) {
    if (!read_uint(doc, "ttlSecs", 1, 3600, n))
      return fail("ttlSecs: expected 1 to 3600");
    c.ttl_secs = static_cast<uint32_t>(n);
  } else if (!read_uint(doc, "token", 1, uint64_t{1} << 62, c.token)) {
    return fail("token: expected the token the lock was granted with");
  }
  if (v == sweep_verb::publish) {
    std::string error;
    auto counts = read_counts(doc, false, error);
    if (!counts)
      return fail(error);
    c.counts = std::move(*counts);
  }
  out.call = std::move(c);
  return out;
}

std::optional<std::string> counts_lock_name(std::string_view query) {
  std::string name{engine_reconcile_lock};
  while (!query.empty()) {
    auto amp = query.find('&');
    auto pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (pair.substr(0, 5) == "name=")
      name = std::string{pair.substr(5)};
  }
  if (!valid_lock_name(name))
    return std::nullopt;
  return name;
}

std::string encode(sweep_verb v, const sweep_answer& a) {
  json doc = json::object();
  if (v == sweep_verb::acquire) {
    doc["granted"] = a.granted;
    doc["holder"] = a.holder;
    doc["expiresInMs"] = a.expires_in_ms;
    if (a.granted)
      doc["token"] = a.token;
  } else if (v == sweep_verb::release) {
    doc["released"] = true;
  } else {
    doc["counts"] = counts_json(a.counts, true);
  }
  return dump(doc);
}

std::optional<sweep_answer> decode_sweep_answer(sweep_verb v, std::string_view body) {
  if (body.size() > max_sweep_call_bytes * 4 || !json_text::nests_within(body, 3))
    return std::nullopt;
  auto doc = json::parse(body, nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    return std::nullopt;
  sweep_answer a;
  if (v == sweep_verb::acquire) {
    auto granted = doc.find("granted");
    if (granted == doc.end() || !granted->is_boolean() || !read_name(doc, "holder", a.holder)
        || !read_uint(doc, "expiresInMs", 0, uint64_t{1} << 62, a.expires_in_ms))
      return std::nullopt;
    a.granted = granted->get<bool>();
    if (a.granted && !read_uint(doc, "token", 1, uint64_t{1} << 62, a.token))
      return std::nullopt;
    return a;
  }
  if (v == sweep_verb::release)
    return a;
  std::string error;
  auto counts = read_counts(doc, true, error);
  if (!counts)
    return std::nullopt;
  a.counts = std::move(*counts);
  return a;
}

} // namespace qf::worker_api
