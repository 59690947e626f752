// Walks a YAML document and collects problems with their paths, so that one
// run reports them all. Shared by the loader's sections.
#pragma once

#include "protocols/config/loader.hpp"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace qf::config::detail {

/// Collects problems while the walk goes on, so one run reports them all.
class walker {
public:
  std::vector<std::string> problems;

  void report(const std::string& path, const std::string& what) {
    problems.push_back(path.empty() ? what : path + ": " + what);
  }

  bool expect_map(const YAML::Node& n, const std::string& path) {
    if (n.IsMap())
      return true;
    report(path, "expected a mapping");
    return false;
  }

  void check_keys(const YAML::Node& n, const std::string& path,
                  std::initializer_list<std::string_view> allowed) {
    for (const auto& kv : n) {
      auto key = kv.first.Scalar();
      bool known = false;
      for (auto a : allowed)
        known = known || a == key;
      if (!known)
        report(join(path, key), "unknown key");
    }
  }

  static std::string join(const std::string& path, std::string_view key) {
    return path.empty() ? std::string{key} : path + "." + std::string{key};
  }

  static std::string index(const std::string& path, size_t i) {
    return path + "[" + std::to_string(i) + "]";
  }

  std::optional<std::string> string_of(const YAML::Node& n,
                                       const std::string& path) {
    if (n.IsScalar())
      return n.Scalar();
    report(path, "expected a string");
    return std::nullopt;
  }

  void read(const YAML::Node& parent, const std::string& path,
            std::string_view key, std::string& out) {
    if (auto n = parent[std::string{key}]; n && !n.IsNull())
      if (auto s = string_of(n, join(path, key)))
        out = *s;
  }

  void read(const YAML::Node& parent, const std::string& path,
            std::string_view key, bool& out) {
    auto n = parent[std::string{key}];
    if (!n || n.IsNull())
      return;
    bool value = false;
    if (n.IsScalar() && YAML::convert<bool>::decode(n, value))
      out = value;
    else
      report(join(path, key), "expected true or false");
  }

  template <class Int>
  bool read_uint(const YAML::Node& parent, const std::string& path,
                 std::string_view key, Int& out, uint64_t max) {
    auto n = parent[std::string{key}];
    if (!n || n.IsNull())
      return false;
    uint64_t value = 0;
    const auto& s = n.IsScalar() ? n.Scalar() : std::string{};
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (s.empty() || ec != std::errc{} || end != s.data() + s.size()
        || value > max) {
      report(join(path, key), "expected a whole number from 0 to "
                                + std::to_string(max));
      return false;
    }
    out = static_cast<Int>(value);
    return true;
  }

  void read_port(const YAML::Node& parent, const std::string& path,
                 uint16_t& out) {
    if (read_uint(parent, path, "port", out, 65535) && out == 0)
      report(join(path, "port"), "port 0 is not allowed");
  }

  void read(const YAML::Node& parent, const std::string& path,
            std::string_view key, duration& out) {
    auto n = parent[std::string{key}];
    if (!n || n.IsNull())
      return;
    auto d = n.IsScalar() ? parse_duration(n.Scalar()) : std::nullopt;
    if (d)
      out = *d;
    else
      report(join(path, key),
             "expected a duration such as 500ms, 30s, 1m or 1h");
  }

  void read_seconds(const YAML::Node& parent, const std::string& path,
                    std::string_view key, std::chrono::seconds& out) {
    uint32_t secs = 0;
    if (read_uint(parent, path, key, secs, 365u * 24 * 3600))
      out = std::chrono::seconds(secs);
  }

  void read_string_list(const YAML::Node& parent, const std::string& path,
                        std::string_view key, std::vector<std::string>& out) {
    auto n = parent[std::string{key}];
    if (!n || n.IsNull())
      return;
    auto p = join(path, key);
    if (!n.IsSequence()) {
      report(p, "expected a list");
      return;
    }
    for (size_t i = 0; i < n.size(); ++i)
      if (auto s = string_of(n[i], index(p, i)))
        out.push_back(*s);
  }

  void read_string_map(const YAML::Node& parent, const std::string& path,
                       std::string_view key,
                       std::map<std::string, std::string>& out) {
    auto n = parent[std::string{key}];
    if (!n || n.IsNull())
      return;
    auto p = join(path, key);
    if (!expect_map(n, p))
      return;
    for (const auto& kv : n)
      if (auto s = string_of(kv.second, join(p, kv.first.Scalar())))
        out[kv.first.Scalar()] = *s;
  }
};

} // namespace qf::config::detail
