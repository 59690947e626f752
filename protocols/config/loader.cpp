// YAML -> gateway_config, with every problem reported against its path.
#include "protocols/config/loader.hpp"

#include "protocols/config/loader_sections.hpp"

#include <fstream>
#include <sstream>

namespace qf::config {

namespace {

using detail::walker;

bool is_worker(const YAML::Node& root) {
  auto role = root["queryflux"] && root["queryflux"].IsMap() ? root["queryflux"]["role"]
                                                             : YAML::Node{};
  return role && role.IsScalar() && role.Scalar() == "worker";
}

gateway_config read_root(walker& w, const YAML::Node& root, const load_options& opts) {
  gateway_config c;
  if (!w.expect_map(root, ""))
    return c;
  bool worker = is_worker(root);
  std::vector<std::string_view> owned;
  if (worker)
    owned = detail::report_owned_by_control_plane(w, root, opts.fleet_from_snapshot);
  for (const auto& kv : root) {
    auto key = kv.first.Scalar();
    static constexpr std::string_view known[] = {
      "queryflux", "monitor", "clusters", "clusterGroups", "routers", "routingFallback",
      "auth", "databaseCache", "translation", "clusterStatsConfiguration"};
    if (std::find(std::begin(known), std::end(known), key) == std::end(known)
        && std::find(owned.begin(), owned.end(), key) == owned.end())
      w.report(key, "unknown key");
  }
  if (auto t = root["translation"]; t && !t.IsNull())
    read_translation(w, t, c.translation);
  if (auto d = root["databaseCache"]; d && !d.IsNull() && !worker)
    read_database_cache(w, d, c.database_cache);
  if (auto a = root["auth"]; a && !a.IsNull())
    read_auth(w, a, c);
  if (auto n = root["queryflux"])
    read_node(w, n, c.queryflux);
  else
    w.report("queryflux", "missing");
  if (auto s = root["clusterStatsConfiguration"]; s && !s.IsNull())
    read_cluster_stats_configuration(w, s, c.health);
  if (auto m = root["monitor"]; m && !m.IsNull())
    read_monitor(w, m, c.health);
  if (auto cl = root["clusters"]; cl && !cl.IsNull()
                                  && w.expect_map(cl, "clusters"))
    for (const auto& kv : cl) {
      cluster x;
      read_cluster(w, kv.first.Scalar(), kv.second,
                   "clusters." + kv.first.Scalar(), c.health, x);
      c.clusters.push_back(std::move(x));
    }
  if (auto gr = root["clusterGroups"];
      gr && !gr.IsNull() && w.expect_map(gr, "clusterGroups"))
    for (const auto& kv : gr) {
      cluster_group g;
      read_group(w, kv.first.Scalar(), kv.second,
                 "clusterGroups." + kv.first.Scalar(), g);
      c.groups.push_back(std::move(g));
    }
  // A worker's file names no groups: they come with its snapshot.
  if (c.groups.empty() && (!worker || opts.fleet_from_snapshot))
    w.report("clusterGroups", "needs at least one group");
  if (auto rs = root["routers"]; rs && !rs.IsNull()) {
    if (!rs.IsSequence())
      w.report("routers", "expected a list");
    else
      for (size_t i = 0; i < rs.size(); ++i) {
        router r;
        read_router(w, rs[i], walker::index("routers", i), r);
        c.routers.push_back(std::move(r));
      }
  }
  w.read(root, "", "routingFallback", c.routing_fallback);
  if (c.routing_fallback.empty() && c.groups.size() == 1)
    c.routing_fallback = c.groups.front().name;
  check_references(w, c);
  return c;
}


} // namespace

std::optional<duration> parse_duration(std::string_view text) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(),
                                   value);
  if (ec != std::errc{} || end == text.data() || value > 1'000'000'000)
    return std::nullopt;
  auto unit = std::string_view{end, static_cast<size_t>(text.data()
                                                         + text.size() - end)};
  using namespace std::chrono;
  if (unit == "ms")
    return milliseconds(value);
  if (unit == "s")
    return seconds(value);
  if (unit == "m")
    return minutes(value);
  if (unit == "h")
    return hours(value);
  if (unit == "d")
    return hours(24 * value);
  return std::nullopt;
}

load_result load_from_string(std::string_view yaml_text, const load_options& opts) {
  load_result result;
  walker w;
  try {
    auto root = YAML::Load(std::string{yaml_text});
    auto config = read_root(w, root, opts);
    if (w.problems.empty())
      result.config = std::move(config);
  } catch (const YAML::Exception& e) {
    std::ostringstream msg;
    msg << "line " << e.mark.line + 1 << ", column " << e.mark.column + 1
        << ": " << e.msg;
    w.problems.push_back(msg.str());
  }
  result.problems = std::move(w.problems);
  return result;
}

load_result load_from_file(const std::string& path) {
  std::ifstream in{path};
  if (!in) {
    load_result result;
    result.problems.push_back(path + ": cannot read the file");
    return result;
  }
  std::ostringstream text;
  text << in.rdbuf();
  return load_from_string(text.str());
}

} // namespace qf::config