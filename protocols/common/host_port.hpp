// host:port as URLs and addresses write it, IPv6 in brackets ([::1]:9000).
// Pure.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace qf {

struct host_port {
  std::string host; // without brackets
  uint16_t port = 0;
};

/// Splits an authority; a missing port is `default_port` (nullopt: the port
/// is required). nullopt for an empty host or a port that is not 1-65535.
inline std::optional<host_port> split_host_port(std::string_view authority,
                                                std::optional<uint16_t> default_port) {
  host_port out;
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos)
      return std::nullopt;
    out.host = std::string{authority.substr(1, close - 1)};
    auto rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':')
        return std::nullopt;
      port = rest.substr(1);
    }
  } else {
    auto colon = authority.rfind(':');
    if (colon != std::string_view::npos && authority.find(':') != colon)
      return std::nullopt; // an IPv6 address needs its brackets
    out.host = std::string{authority.substr(0, colon)};
    if (colon != std::string_view::npos)
      port = authority.substr(colon + 1);
  }
  if (out.host.empty())
    return std::nullopt;
  if (port.data() == nullptr || (port.empty() && default_port)) {
    if (!default_port)
      return std::nullopt;
    out.port = *default_port;
    return out;
  }
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc{} || end != port.data() + port.size() || value == 0
      || value > 65535)
    return std::nullopt;
  out.port = static_cast<uint16_t>(value);
  return out;
}

/// host:port again, with brackets around an IPv6 host.
inline std::string join_host_port(const std::string& host, uint16_t port) {
  auto h = host.find(':') == std::string::npos ? host : "[" + host + "]";
  return h + ":" + std::to_string(port);
}

} // namespace qf
