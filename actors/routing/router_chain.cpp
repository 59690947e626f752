// Router evaluation.
#include "actors/routing/router_chain.hpp"

#include "protocols/common/json_writer.hpp"

#include <re2/re2.h>

namespace qf::routing {

namespace {

const char* type_name(config::router_kind k) {
  switch (k) {
    case config::router_kind::protocol_based:
      return "protocolBased";
    case config::router_kind::header:
      return "header";
    case config::router_kind::user_group:
      return "userGroup";
    case config::router_kind::query_regex:
      return "queryRegex";
    case config::router_kind::tags:
      return "tags";
  }
  return "unknown";
}

template <class Map, class Key>
const std::string* lookup(const Map& m, const Key& k) {
  auto i = m.find(k);
  return i == m.end() ? nullptr : &i->second;
}

bool tags_match(const config::tag_rule& rule, const route_request& req) {
  for (const auto& [key, want] : rule.tags) {
    auto have = req.tags.find(key);
    if (have == req.tags.end())
      return false;
    if (want && have->second != want)
      return false;
  }
  return !rule.tags.empty();
}

} // namespace

router_chain::router_chain(const std::vector<config::router>& routers,
                           std::string routing_fallback)
  : routers_(routers), fallback_(std::move(routing_fallback)) {
  for (const auto& r : routers_) {
    auto& compiled = regexes_.emplace_back();
    for (const auto& rule : r.regex_rules)
      compiled.push_back(std::make_unique<re2::RE2>(rule.regex, RE2::Quiet));
  }
}

router_chain::~router_chain() = default;

decision router_chain::route(const route_request& req) const {
  decision d;
  for (size_t i = 0; i < routers_.size(); ++i) {
    const auto& r = routers_[i];
    trace_step step{type_name(r.kind), false, {}};
    const std::string* group = nullptr;
    switch (r.kind) {
      case config::router_kind::protocol_based:
        group = lookup(r.protocol_to_group, req.protocol);
        break;
      case config::router_kind::header:
        if (auto v = lookup(req.headers, r.header_name))
          group = lookup(r.header_value_to_group, *v);
        break;
      case config::router_kind::user_group:
        group = lookup(r.user_to_group, req.user);
        break;
      case config::router_kind::query_regex:
        for (size_t k = 0; k < r.regex_rules.size() && !step.matched; ++k) {
          const auto& re = *regexes_[i][k];
          if (!re.ok() || !re2::RE2::PartialMatch(req.sql, re))
            continue;
          const auto& rule = r.regex_rules[k];
          if (rule.deny) {
            step.matched = true;
            step.result = rule.error;
            d.trace.push_back(step);
            d.denied = true;
            d.deny_message = rule.error;
            return d;
          }
          group = &rule.target_group;
          break;
        }
        break;
      case config::router_kind::tags:
        for (const auto& rule : r.tag_rules)
          if (tags_match(rule, req)) {
            group = &rule.target_group;
            break;
          }
        break;
    }
    if (group) {
      step.matched = true;
      step.result = *group;
      d.trace.push_back(std::move(step));
      d.group = *group;
      return d;
    }
    d.trace.push_back(std::move(step));
  }
  d.group = fallback_;
  d.used_fallback = true;
  return d;
}

std::string trace_to_json(const decision& d) {
  std::string out = "{\"decisions\":[";
  for (size_t i = 0; i < d.trace.size(); ++i) {
    const auto& s = d.trace[i];
    if (i > 0)
      out += ',';
    out += "{\"routerType\":";
    json_text::append_string(out, s.router);
    out += ",\"matched\":";
    out += s.matched ? "true" : "false";
    out += ",\"result\":";
    if (s.matched)
      json_text::append_string(out, s.result);
    else
      out += "null";
    out += '}';
  }
  out += "],\"finalGroup\":";
  if (d.denied)
    out += "null";
  else
    json_text::append_string(out, d.group);
  out += ",\"usedFallback\":";
  out += d.used_fallback ? "true" : "false";
  out += ",\"denied\":";
  out += d.denied ? "true" : "false";
  out += '}';
  return out;
}

} // namespace qf::routing
