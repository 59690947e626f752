#include "protocols/config/fleet.hpp"

#include "protocols/common/json_writer.hpp"

#include <yaml-cpp/yaml.h>

namespace qf::config {

namespace {

void append_json(std::string& out, const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      out += '{';
      bool first = true;
      for (const auto& kv : n) {
        if (!first)
          out += ',';
        first = false;
        json_text::append_string(out, kv.first.Scalar());
        out += ':';
        append_json(out, kv.second);
      }
      out += '}';
      break;
    }
    case YAML::NodeType::Sequence: {
      out += '[';
      for (size_t i = 0; i < n.size(); ++i) {
        if (i > 0)
          out += ',';
        append_json(out, n[i]);
      }
      out += ']';
      break;
    }
    case YAML::NodeType::Scalar: {
      const auto& s = n.Scalar();
      bool plain = n.Tag() != "!"; // "!" marks a quoted scalar: a string
      // A plain scalar that reads as a JSON number keeps being one.
      if (plain && (s == "true" || s == "false" || json_text::is_number(s)))
        out += s;
      else
        json_text::append_string(out, s);
      break;
    }
    default:
      out += "null";
  }
}

std::string json_of(const YAML::Node& n) {
  std::string out;
  append_json(out, n);
  return out;
}

} // namespace

fleet fleet_of(std::string_view yaml_text) {
  fleet out;
  auto root = YAML::Load(std::string{yaml_text});
  if (auto c = root["clusters"]; c && c.IsMap())
    for (const auto& kv : c)
      out.clusters.emplace_back(kv.first.Scalar(), json_of(kv.second));
  if (auto g = root["clusterGroups"]; g && g.IsMap())
    for (const auto& kv : g)
      out.groups.emplace_back(kv.first.Scalar(), json_of(kv.second));
  if (auto r = root["routers"]; r && r.IsSequence())
    for (size_t i = 0; i < r.size(); ++i)
      out.routers.push_back(json_of(r[i]));
  if (auto f = root["routingFallback"]; f && f.IsScalar())
    out.routing_fallback = f.Scalar();
  return out;
}

namespace {

/// The file's YAML with its fleet sections replaced by f's.
YAML::Node merged(std::string_view yaml_text, const fleet& f) {
  auto root = YAML::Load(std::string{yaml_text});
  // JSON is YAML: each stored document is read back as the file's was.
  YAML::Node clusters{YAML::NodeType::Map};
  for (const auto& [name, json] : f.clusters)
    clusters[name] = YAML::Load(json);
  YAML::Node groups{YAML::NodeType::Map};
  for (const auto& [name, json] : f.groups)
    groups[name] = YAML::Load(json);
  YAML::Node routers{YAML::NodeType::Sequence};
  for (const auto& json : f.routers)
    routers.push_back(YAML::Load(json));
  root["clusters"] = clusters;
  root["clusterGroups"] = groups;
  root["routers"] = routers;
  if (f.routing_fallback.empty())
    root.remove("routingFallback");
  else
    root["routingFallback"] = f.routing_fallback;
  return root;
}

load_result load_node(const YAML::Node& root, const load_options& opts) {
  YAML::Emitter emitter;
  emitter << root;
  return load_from_string(emitter.c_str(), opts);
}

load_result unreadable(const YAML::Exception& e) {
  load_result result;
  result.problems.push_back(std::string{"the stored configuration cannot be read: "} + e.what());
  return result;
}

} // namespace

load_result load_with_fleet(std::string_view yaml_text, const fleet& f) {
  try {
    return load_node(merged(yaml_text, f), {});
  } catch (const YAML::Exception& e) {
    return unreadable(e);
  }
}

load_result load_worker_config(std::string_view worker_yaml, const fleet& f,
                               std::string_view auth_json, std::string_view monitor_json) {
  try {
    auto root = merged(worker_yaml, f);
    if (!auth_json.empty())
      root["auth"] = YAML::Load(std::string{auth_json});
    if (!monitor_json.empty() && !root["monitor"])
      root["monitor"] = YAML::Load(std::string{monitor_json});
    return load_node(root, {.fleet_from_snapshot = true});
  } catch (const YAML::Exception& e) {
    return unreadable(e);
  }
}

} // namespace qf::config
