// An asynchronous HTTP/1.1 client for a worker's calls to its control plane
// and its peers (the http_transport of actors/worker): one exchange per
// connection, plain or TLS with the server's certificate and host name
// checked (system CAs or a CA file), a deadline over the whole exchange.
// Its own io_context on one thread; Beast stays in client.cpp.
#pragma once

#include "actors/worker/http_transport.hpp"

#include <memory>
#include <string>

namespace qf::http {

class client : public http_transport {
public:
  /// ca_file: the CAs https servers are checked against ("": the system's).
  explicit client(std::string ca_file = {});
  ~client() override;

  client(const client&) = delete;
  client& operator=(const client&) = delete;

  void send(http_call call, std::function<void(http_outcome)> done) override;
  void resolve(std::string host, std::function<void(std::vector<std::string>)> done) override;

  /// Ends the IO thread; calls under way never answer. Idempotent.
  void stop() override;

private:
  struct impl;
  std::shared_ptr<impl> impl_;
};

} // namespace qf::http
