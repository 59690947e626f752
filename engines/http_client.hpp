// A blocking HTTP/1.1 client for engines that speak HTTP (Trino): one kept
// connection (plain or TLS), a timeout per request, and interrupt() from
// another thread. Beast stays behind the pimpl, in http_client.cpp only.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qf::engines {

struct http_url {
  bool tls = false;
  std::string host;
  uint16_t port = 80;
  std::string target = "/"; // path and query
};

/// Reads http(s)://host[:port][/path]; nullopt for anything else.
std::optional<http_url> parse_http_url(std::string_view url);

using http_headers = std::vector<std::pair<std::string, std::string>>;

struct http_response {
  int status = 0;
  std::string body;
};

/// How https:// servers are trusted: the system's CAs, those of ca_file,
/// or (local tests only) anyone.
struct tls_trust {
  std::string ca_file;
  bool insecure_skip_verify = false;
};

class http_client {
public:
  http_client(std::chrono::milliseconds timeout, tls_trust trust = {});
  ~http_client();

  http_client(const http_client&) = delete;
  http_client& operator=(const http_client&) = delete;

  /// Sends one request, reusing the connection to the same host and port
  /// (one the server closed while it idled is opened anew). A GET or DELETE
  /// that fails on a kept connection is sent once more; a POST is not, as
  /// the server may have run it. `timeout` overrides the client's. Throws
  /// std::runtime_error on network or TLS failure, timeout or interrupt.
  http_response send(std::string_view method, const http_url& url, const http_headers& headers,
                     std::string body = {},
                     std::optional<std::chrono::milliseconds> timeout = std::nullopt);

  /// Ends the request in progress (it throws); safe from any thread.
  void interrupt();

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace qf::engines
