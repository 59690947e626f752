#include "protocols/config/fleet_edit.hpp"

#include "protocols/common/json_depth.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>

namespace qf::config {

namespace {

using items = std::vector<std::pair<std::string, std::string>>;

items& items_of(fleet& f, fleet_item kind) {
  return kind == fleet_item::cluster ? f.clusters : f.groups;
}

const items& items_of(const fleet& f, fleet_item kind) {
  return kind == fleet_item::cluster ? f.clusters : f.groups;
}

std::string_view noun(fleet_item kind) {
  return kind == fleet_item::cluster ? "cluster" : "cluster group";
}

fleet_edit refuse(int status, std::string message) {
  fleet_edit out;
  out.status = status;
  out.message = std::move(message);
  return out;
}

std::string joined(const std::vector<std::string>& problems) {
  std::string out;
  for (const auto& p : problems) {
    if (!out.empty())
      out += "; ";
    out += p;
  }
  return out;
}

/// Validates `next` as a whole; problems answer with `failure`.
fleet_edit checked(fleet next, std::string_view yaml_text, int success, int failure) {
  auto loaded = load_with_fleet(yaml_text, next);
  if (!loaded.config)
    return refuse(failure, joined(loaded.problems));
  fleet_edit out;
  out.status = success;
  out.next = std::move(next);
  out.config = std::move(loaded.config);
  return out;
}

std::optional<nlohmann::json> parse_object(std::string_view body, std::string& why) {
  if (!json_text::nests_within(body, 32)) {
    why = "the body nests deeper than 32 levels";
    return std::nullopt;
  }
  auto doc = nlohmann::json::parse(body, nullptr, false);
  if (doc.is_discarded()) {
    why = "the body is not valid JSON";
    return std::nullopt;
  }
  if (!doc.is_object()) {
    why = "the body must be a JSON object";
    return std::nullopt;
  }
  return doc;
}

/// Names end up in URLs, metric labels, SQL rows and log lines.
bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > 128 || !std::isalnum(static_cast<unsigned char>(name[0])))
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
}

bool secret_key(const std::string& key) {
  return key == "password" || key == "token";
}


void mask(nlohmann::json& doc) {
  if (!doc.is_object())
    return;
  for (auto& [key, value] : doc.items()) {
    if (secret_key(key) && value.is_string())
      value = secret_mask;
    else if (key == "endpoint" && value.is_string())
      value = masked_url(value.get<std::string>());
    else
      mask(value);
  }
}

/// Puts the stored secrets back where a body sent their masks.
void unmask(nlohmann::json& doc, const nlohmann::json& stored) {
  if (!doc.is_object() || !stored.is_object())
    return;
  for (auto& [key, value] : doc.items()) {
    auto old = stored.find(key);
    if (old == stored.end())
      continue;
    if (secret_key(key) && value.is_string() && value.get<std::string>() == secret_mask)
      value = *old;
    else if (key == "endpoint" && value.is_string() && old->is_string()
             && value.get<std::string>() == masked_url(old->get<std::string>()))
      value = *old;
    else
      unmask(value, *old);
  }
}

} // namespace

std::string masked_url(const std::string& url) {
  auto out = url;
  auto start = out.find("://");
  auto at = out.find('@');
  auto path = start == std::string::npos ? std::string::npos : out.find('/', start + 3);
  if (start != std::string::npos && at != std::string::npos && at > start && at < path) {
    auto colon = out.find(':', start + 3);
    if (colon != std::string::npos && colon < at)
      out = out.substr(0, colon + 1) + std::string{secret_mask} + out.substr(at);
  }
  // ...?password=secret&sslmode=require
  for (auto q = out.find('?'); q != std::string::npos;) {
    auto amp = out.find('&', q + 1);
    auto param = out.substr(q + 1, amp == std::string::npos ? std::string::npos : amp - q - 1);
    if (param.rfind("password=", 0) == 0)
      out = out.substr(0, q + 10) + std::string{secret_mask}
            + (amp == std::string::npos ? "" : out.substr(amp));
    q = out.find('&', q + 1);
  }
  return out;
}

std::string shown_item(const std::string& name, const std::string& stored) {
  auto doc = nlohmann::json::parse(stored, nullptr, false);
  nlohmann::ordered_json out;
  out["name"] = name;
  if (doc.is_object()) {
    mask(doc);
    for (auto& [k, v] : doc.items())
      out[k] = v;
  }
  return out.dump();
}

std::optional<std::string> find_item(const fleet& f, fleet_item kind, std::string_view name) {
  for (const auto& [n, json] : items_of(f, kind))
    if (n == name)
      return json;
  return std::nullopt;
}

fleet_edit put_item(const fleet& before, std::string_view yaml_text, fleet_item kind,
                    const std::string& name, std::string_view body) {
  if (!valid_name(name))
    return refuse(400, "a name is 1 to 128 letters, digits, '_', '-' or '.', starting with a "
                       "letter or digit");
  std::string why;
  auto doc = parse_object(body, why);
  if (!doc)
    return refuse(400, why);
  if (auto n = doc->find("name"); n != doc->end()) {
    if (!n->is_string() || n->get<std::string>() != name)
      return refuse(400, "\"name\" in the body differs from the name in the path");
    doc->erase(n);
  }
  auto next = before;
  auto& list = items_of(next, kind);
  auto it = std::find_if(list.begin(), list.end(), [&](const auto& i) { return i.first == name; });
  bool created = it == list.end();
  if (!created)
    unmask(*doc, nlohmann::json::parse(it->second, nullptr, false));
  if (created)
    list.emplace_back(name, doc->dump());
  else
    it->second = doc->dump();
  return checked(std::move(next), yaml_text, created ? 201 : 200, 400);
}

fleet_edit delete_item(const fleet& before, std::string_view yaml_text, fleet_item kind,
                       const std::string& name) {
  auto next = before;
  auto& list = items_of(next, kind);
  auto it = std::find_if(list.begin(), list.end(), [&](const auto& i) { return i.first == name; });
  if (it == list.end())
    return refuse(404, "no " + std::string{noun(kind)} + " named " + name);
  list.erase(it);
  // The fleet before was valid: whatever breaks now still names the item.
  auto out = checked(std::move(next), yaml_text, 200, 409);
  if (out.status == 409)
    out.message = std::string{noun(kind)} + " " + name + " is still in use: " + out.message;
  return out;
}

fleet_edit set_enabled(const fleet& before, std::string_view yaml_text,
                       const std::string& name, bool on, const gateway_config* running) {
  auto json = find_item(before, fleet_item::cluster, name);
  if (!json)
    return refuse(404, "no cluster named " + name);
  auto doc = nlohmann::json::parse(*json, nullptr, false);
  if (!doc.is_object())
    return refuse(409, "the stored configuration of cluster " + name + " is not an object");
  doc["enabled"] = on;
  if (!running || !running->find_cluster(name)) {
    auto out = put_item(before, yaml_text, fleet_item::cluster, name, doc.dump());
    if (out.status == 201)
      out.status = 200;
    return out;
  }
  fleet_edit out;
  out.next = before;
  for (auto& [n, stored] : out.next.clusters)
    if (n == name)
      stored = doc.dump();
  out.config = *running;
  for (auto& c : out.config->clusters)
    if (c.name == name)
      c.enabled = on;
  return out;
}

fleet_edit put_routing(const fleet& before, std::string_view yaml_text, std::string_view body) {
  std::string why;
  auto doc = parse_object(body, why);
  if (!doc)
    return refuse(400, why);
  auto next = before;
  next.routers.clear();
  next.routing_fallback.clear();
  for (const auto& [key, value] : doc->items()) {
    if (key == "routers") {
      if (!value.is_array())
        return refuse(400, "routers: must be a list");
      for (const auto& r : value)
        next.routers.push_back(r.dump());
    } else if (key == "routingFallback") {
      if (!value.is_null() && !value.is_string())
        return refuse(400, "routingFallback: must be a group name or null");
      if (value.is_string())
        next.routing_fallback = value.get<std::string>();
    } else {
      return refuse(400, key + ": unknown key (routers, routingFallback)");
    }
  }
  return checked(std::move(next), yaml_text, 200, 400);
}

namespace {

/// The cluster keys that a proxyTo URL stands for.
bool endpoint_keys(const std::string& url, nlohmann::json& doc, std::string& why) {
  for (const char* key : {"endpoint", "databasePath", "host", "port", "database", "user",
                          "password"})
    doc.erase(key);
  auto starts = [&](std::string_view p) { return url.rfind(p, 0) == 0; };
  if (starts("postgres://") || starts("postgresql://")) {
    doc["engine"] = "postgres";
    doc["endpoint"] = url;
  } else if (starts("mysql://")) {
    doc["engine"] = "mysql";
    doc["endpoint"] = url;
  } else if (starts("http://") || starts("https://")) {
    doc["engine"] = "trino";
    doc["endpoint"] = url;
  } else if (starts("duckdb:") || starts("sqlite:")) {
    doc["engine"] = starts("duckdb:") ? "duckDb" : "sqlite";
    auto path = url.substr(url.find(':') + 1);
    if (!path.empty() && path != ":memory:")
      doc["databasePath"] = path;
  } else {
    why = "proxyTo: \"" + url + "\" names no engine this build runs "
          "(http(s)://, postgres://, mysql://, duckdb:PATH or sqlite:PATH)";
    return false;
  }
  return true;
}

/// Makes `cluster` a member of `group` only.
bool move_to_group(fleet& f, const std::string& cluster, const std::string& group) {
  bool found = false;
  for (auto& [name, json] : f.groups) {
    auto doc = nlohmann::json::parse(json, nullptr, false);
    if (!doc.is_object())
      continue;
    auto members = doc.value("members", nlohmann::json::array());
    if (!members.is_array())
      continue;
    nlohmann::json kept = nlohmann::json::array();
    for (const auto& m : members)
      if (m != cluster)
        kept.push_back(m);
    if (name == group) {
      kept.push_back(cluster);
      found = true;
    }
    if (kept != members) {
      doc["members"] = kept;
      json = doc.dump();
    }
  }
  return found;
}

} // namespace

fleet_edit put_backend(const fleet& before, std::string_view yaml_text, std::string_view body,
                       bool add) {
  std::string why;
  auto doc = parse_object(body, why);
  if (!doc)
    return refuse(400, why);
  auto text = [&](const char* key, std::string fallback) {
    auto i = doc->find(key);
    return i != doc->end() && i->is_string() ? i->get<std::string>() : fallback;
  };
  auto name = text("name", "");
  if (name.empty())
    return refuse(400, "name: missing");
  auto stored = find_item(before, fleet_item::cluster, name);
  if (add && stored)
    return refuse(409, "a cluster named " + name + " exists already");
  auto cluster = stored ? nlohmann::json::parse(*stored, nullptr, false) : nlohmann::json::object();
  if (!cluster.is_object())
    cluster = nlohmann::json::object();
  auto proxy_to = text("proxyTo", "");
  // What GET showed (the password masked) sent back means the stored one.
  if (auto e = cluster.find("endpoint"); e != cluster.end() && e->is_string()
                                         && masked_url(e->get<std::string>()) == proxy_to)
    proxy_to = e->get<std::string>();
  if (!endpoint_keys(proxy_to, cluster, why))
    return refuse(400, why);
  if (auto a = doc->find("active"); a != doc->end() && a->is_boolean())
    cluster["enabled"] = a->get<bool>();
  // Kept apart from proxyTo when it says something else (what GET showed
  // for a backend without one is its masked proxyTo); the backend's whole
  // config comes with an update, so one left out is dropped.
  if (auto external = text("externalUrl", ""); !external.empty() && external != proxy_to
                                              && masked_url(proxy_to) != external)
    cluster["externalUrl"] = external;
  else
    cluster.erase("externalUrl");
  auto next = before;
  auto group = text("routingGroup", "adhoc");
  if (!move_to_group(next, name, group))
    return refuse(400, "routingGroup: no cluster group named " + group);
  auto out = put_item(next, yaml_text, fleet_item::cluster, name, cluster.dump());
  if (out.status < 300)
    out.status = 200;
  return out;
}

fleet_edit delete_backend(const fleet& before, std::string_view yaml_text,
                          const std::string& name) {
  if (!find_item(before, fleet_item::cluster, name))
    return refuse(404, "no cluster named " + name);
  auto next = before;
  move_to_group(next, name, "");
  return delete_item(next, yaml_text, fleet_item::cluster, name);
}

std::string routing_json(const fleet& f) {
  std::string out = "{\"routers\":[";
  for (size_t i = 0; i < f.routers.size(); ++i) {
    if (i > 0)
      out += ',';
    out += f.routers[i];
  }
  out += "],\"routingFallback\":";
  out += f.routing_fallback.empty() ? "null" : nlohmann::json(f.routing_fallback).dump();
  return out + "}";
}

} // namespace qf::config
