// HTTP/1.1 listeners on one shared io_context (Boost.Beast behind a pimpl).
#pragma once

#include "net/http/types.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace qf::http {

struct listener_options {
  std::string name; // for logs: "trinoHttp", "adminApi"
  std::string address = "0.0.0.0";
  uint16_t port = 0;
  /// At the limit a newcomer closes the longest-idle connection (one
  /// waiting for a request, none in flight); with none idle it gets 503.
  uint32_t max_connections = 1000;
  uint64_t body_limit = 16 * 1024 * 1024;
  /// PEM files; set: HTTPS only.
  std::string tls_cert_file;
  std::string tls_key_file;
  /// A request's headers must arrive within this, from the connection's
  /// start or from its first byte on a kept-alive connection (Envoy's
  /// request_headers_timeout): idle or byte-a-minute sockets cannot hold
  /// the listener.
  std::chrono::milliseconds header_timeout{10'000};
};

class service {
public:
  service();
  ~service();

  service(const service&) = delete;
  service& operator=(const service&) = delete;

  /// Binds now (so a taken port fails at start) and returns the port
  /// bound (the system's choice for port 0); throws std::runtime_error.
  uint16_t listen(const listener_options& opts, std::shared_ptr<handler> h);

  /// Runs the io_context on `threads` threads.
  void start(unsigned threads);

  /// Closes the listeners; open connections keep being served.
  void stop_accepting();

  /// Waits, at most `timeout`, until every answer handed to a reply is
  /// written (or its connection failed).
  void finish_answers(std::chrono::milliseconds timeout);

  /// Stops everything and joins the threads.
  void stop();

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace qf::http
