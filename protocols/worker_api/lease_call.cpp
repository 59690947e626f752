#include "protocols/worker_api/lease_call.hpp"

#include "protocols/common/json_depth.hpp"
#include "protocols/worker_api/json_fields.hpp"
#include "protocols/worker_api/worker_report.hpp"

#include <nlohmann/json.hpp>

#include <set>

namespace qf::worker_api {

namespace {

using nlohmann::json;

constexpr uint64_t max_count = 100'000;
using fields::read_uint;
using fields::read_name;

} // namespace

std::string_view to_string(lease_verb v) {
  switch (v) {
    case lease_verb::acquire:
      return "acquire";
    case lease_verb::release:
      return "release";
    case lease_verb::renew:
      return "renew";
  }
  return "acquire";
}

std::string_view items_member(lease_verb v) {
  switch (v) {
    case lease_verb::acquire:
      return "requests";
    case lease_verb::release:
      return "releases";
    case lease_verb::renew:
      return "holding";
  }
  return "requests";
}

std::string encode(lease_verb v, const lease_call& c) {
  json items = json::array();
  for (const auto& i : c.items) {
    json item = {{"cluster", i.cluster}, {"count", i.count}};
    if (v == lease_verb::acquire)
      item["group"] = i.group;
    items.push_back(std::move(item));
  }
  json doc = {{"worker", c.worker}, {"incarnation", c.incarnation}, {"seq", c.seq},
              {std::string{items_member(v)}, std::move(items)}};
  if (v == lease_verb::acquire)
    doc["waitMs"] = c.wait_ms;
  if (v == lease_verb::renew)
    doc["heartbeatIntervalSecs"] = c.heartbeat_interval_secs;
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

lease_call_outcome decode_lease_call(lease_verb v, std::string_view body) {
  lease_call_outcome out;
  auto fail = [&](std::string why) {
    out.error = std::move(why);
    return out;
  };
  json doc;
  if (std::string error; !fields::parse_object(body, max_lease_call_bytes, doc, error))
    return fail(std::move(error));
  lease_call c;
  if (!read_name(doc, "worker", c.worker) || !valid_worker_name(c.worker))
    return fail("worker: expected the worker's name");
  if (!read_name(doc, "incarnation", c.incarnation))
    return fail("incarnation: expected the worker process's incarnation");
  if (!read_uint(doc, "seq", 1, uint64_t{1} << 62, c.seq))
    return fail("seq: expected a sequence number of 1 or more");
  uint64_t n = 0;
  if (v == lease_verb::acquire && doc.contains("waitMs")) {
    if (!read_uint(doc, "waitMs", 0, max_lease_wait_ms, n))
      return fail("waitMs: expected 0 to 1000");
    c.wait_ms = static_cast<uint32_t>(n);
  }
  if (v == lease_verb::renew && doc.contains("heartbeatIntervalSecs")) {
    if (!read_uint(doc, "heartbeatIntervalSecs", 1, 3600, n))
      return fail("heartbeatIntervalSecs: expected 1 to 3600");
    c.heartbeat_interval_secs = static_cast<uint32_t>(n);
  }
  auto member = std::string{items_member(v)};
  auto list = doc.find(member);
  if (list == doc.end() || !list->is_array() || list->size() > max_lease_items)
    return fail(member + ": expected an array of at most 1024 items");
  std::set<std::string> seen;
  for (size_t i = 0; i < list->size(); ++i) {
    const auto& e = (*list)[i];
    auto where = member + "[" + std::to_string(i) + "]";
    if (!e.is_object())
      return fail(where + ": expected {cluster, count}");
    lease_item item;
    if (!read_name(e, "cluster", item.cluster))
      return fail(where + ".cluster: expected a cluster's name");
    if (v == lease_verb::acquire && !read_name(e, "group", item.group))
      return fail(where + ".group: expected the group the queries were routed to");
    if (!read_uint(e, "count", v == lease_verb::renew ? 0 : 1, max_count, n))
      return fail(where + ".count: expected " + (v == lease_verb::renew ? "0" : "1")
                  + " to 100000");
    item.count = static_cast<uint32_t>(n);
    if (!seen.insert(item.cluster).second)
      return fail(where + ".cluster: " + item.cluster + " is listed twice");
    c.items.push_back(std::move(item));
  }
  out.call = std::move(c);
  return out;
}

namespace {

bool read_contended(const json& doc, std::vector<acquire_answer::share>& out) {
  auto it = doc.find("contended");
  if (it == doc.end())
    return true; // an older control plane: nothing is contended
  if (!it->is_array() || it->size() > max_lease_items)
    return false;
  for (const auto& c : *it) {
    acquire_answer::share s;
    uint64_t n = 0;
    if (!c.is_object() || !read_name(c, "cluster", s.cluster)
        || !read_uint(c, "share", 0, max_count, n))
      return false;
    s.slots = static_cast<uint32_t>(n);
    out.push_back(std::move(s));
  }
  return true;
}

json contended_json(const acquire_answer& a) {
  json out = json::array();
  for (const auto& c : a.contended)
    out.push_back({{"cluster", c.cluster}, {"share", c.slots}});
  return out;
}

} // namespace

std::string encode(lease_verb v, const acquire_answer& a) {
  if (v == lease_verb::acquire)
    return encode(a);
  json doc = {{"contended", contended_json(a)}};
  if (v == lease_verb::release)
    doc["released"] = true;
  else
    doc["leaseTtlSecs"] = a.lease_ttl_secs;
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::optional<acquire_answer> decode_lease_answer(lease_verb v, std::string_view body) {
  if (v == lease_verb::acquire)
    return decode_acquire_answer(body);
  if (body.size() > max_lease_call_bytes || !json_text::nests_within(body, 3))
    return std::nullopt;
  auto doc = json::parse(body, nullptr, false);
  acquire_answer a;
  if (doc.is_discarded() || !doc.is_object() || !read_contended(doc, a.contended))
    return std::nullopt;
  uint64_t n = 0;
  if (v == lease_verb::renew) {
    if (!read_uint(doc, "leaseTtlSecs", 0, 86400 * 7, n))
      return std::nullopt;
    a.lease_ttl_secs = static_cast<uint32_t>(n);
  }
  return a;
}

lease_refusal decode_refusal(std::string_view body) {
  lease_refusal out;
  if (body.size() > max_lease_call_bytes || !json_text::nests_within(body, 3))
    return out;
  auto doc = json::parse(body, nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    return out;
  if (auto c = doc.find("code"); c != doc.end() && c->is_string())
    out.code = c->get<std::string>();
  if (auto m = doc.find("error"); m != doc.end() && m->is_string())
    out.message = m->get<std::string>();
  return out;
}

std::optional<std::vector<acquire_answer::share>> decode_contended(std::string_view body) {
  if (body.size() > max_lease_call_bytes || !json_text::nests_within(body, 3))
    return std::nullopt;
  auto doc = json::parse(body, nullptr, false);
  std::vector<acquire_answer::share> out;
  if (doc.is_discarded() || !doc.is_object() || !read_contended(doc, out))
    return std::nullopt;
  return out;
}

std::string encode(const acquire_answer& a) {
  json granted = json::array();
  for (const auto& g : a.granted)
    granted.push_back({{"cluster", g.cluster}, {"count", g.count}});
  json denied = json::array();
  for (const auto& d : a.denied)
    denied.push_back({{"cluster", d.cluster},
                      {"group", d.group},
                      {"count", d.count},
                      {"running", d.running},
                      {"max", d.max}});
  json doc = {{"granted", std::move(granted)},
              {"denied", std::move(denied)},
              {"leaseTtlSecs", a.lease_ttl_secs},
              {"contended", contended_json(a)}};
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::optional<acquire_answer> decode_acquire_answer(std::string_view body) {
  if (body.size() > max_lease_call_bytes || !json_text::nests_within(body, 3))
    return std::nullopt;
  auto doc = json::parse(body, nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    return std::nullopt;
  acquire_answer a;
  uint64_t n = 0;
  if (!read_uint(doc, "leaseTtlSecs", 0, 86400 * 7, n))
    return std::nullopt;
  a.lease_ttl_secs = static_cast<uint32_t>(n);
  auto granted = doc.find("granted");
  auto denied = doc.find("denied");
  if (granted == doc.end() || !granted->is_array() || denied == doc.end() || !denied->is_array())
    return std::nullopt;
  for (const auto& g : *granted) {
    lease_item item;
    if (!g.is_object() || !read_name(g, "cluster", item.cluster)
        || !read_uint(g, "count", 1, max_count, n))
      return std::nullopt;
    item.count = static_cast<uint32_t>(n);
    a.granted.push_back(std::move(item));
  }
  for (const auto& d : *denied) {
    acquire_answer::denial x;
    uint64_t count = 0, running = 0, max = 0;
    if (!d.is_object() || !read_name(d, "cluster", x.cluster) || !read_name(d, "group", x.group)
        || !read_uint(d, "count", 1, max_count, count)
        || !read_uint(d, "running", 0, UINT32_MAX, running)
        || !read_uint(d, "max", 0, UINT32_MAX, max))
      return std::nullopt;
    x.count = static_cast<uint32_t>(count);
    x.running = static_cast<uint32_t>(running);
    x.max = static_cast<uint32_t>(max);
    a.denied.push_back(std::move(x));
  }
  if (!read_contended(doc, a.contended))
    return std::nullopt;
  return a;
}

} // namespace qf::worker_api
