// How a worker's actors reach HTTP servers (its control plane, its peers)
// without knowing HTTP's machinery: a call goes out, its outcome comes back
// to a callback on some IO thread, which posts it to the actor as a message.
// net/http/client implements it with Beast; actors never include Beast.
#pragma once

#include <caf/actor_cast.hpp>
#include <caf/actor_control_block.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/send.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace qf {

using http_fields = std::vector<std::pair<std::string, std::string>>;

struct http_call {
  std::string method = "GET";
  /// http(s)://host:port/path?query; the host names the server for TLS
  /// (SNI, certificate check) and the Host header.
  std::string url;
  /// When set, the IP address connected to instead of resolving the URL's
  /// host (a peer found through a headless Service).
  std::string connect_address;
  http_fields headers;
  std::string body;
  /// The whole exchange, connect to last byte.
  std::chrono::milliseconds timeout{10'000};
};

struct http_outcome {
  /// 0: no answer (refused, reset, TLS failure, timeout); see error.
  int status = 0;
  http_fields headers;
  std::string body;
  std::string error;

  bool answered() const {
    return status != 0;
  }

  /// For logs and lastError: the transport's error, or the status and the
  /// start of the body.
  std::string describe() const {
    if (!answered())
      return error.empty() ? std::string{"no answer"} : error;
    auto text = body.substr(0, 300);
    return "HTTP " + std::to_string(status) + (text.empty() ? "" : ": " + text);
  }
};

class http_transport {
public:
  virtual ~http_transport() = default;

  /// Sends `call`; `done` runs once, on an IO thread, with the outcome.
  virtual void send(http_call call, std::function<void(http_outcome)> done) = 0;

  /// Every address `host` resolves to (as text), in resolver order; empty
  /// when it resolves to none.
  virtual void resolve(std::string host, std::function<void(std::vector<std::string>)> done) = 0;

  /// Ends its IO: calls under way never answer. Idempotent.
  virtual void stop() = 0;
};

/// Sends `call` for the actor `self` (a `Handle`); its outcome comes back
/// to it, if it still lives, as the message (tag, id, outcome).
template <class Handle, class Self, class Tag>
void send_for(http_transport& transport, http_call call, Self* self, Tag tag, uint64_t id) {
  auto to = caf::actor_cast<caf::weak_actor_ptr>(self->ctrl());
  transport.send(std::move(call), [to, tag, id](http_outcome o) {
    if (auto strong = caf::actor_cast<caf::strong_actor_ptr>(to))
      caf::anon_send(caf::actor_cast<Handle>(strong), tag, id, std::move(o));
  });
}

} // namespace qf

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(qf::http_outcome)
