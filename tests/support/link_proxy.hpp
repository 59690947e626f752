// A TCP forwarder between one worker and its control plane, for fleet tests:
// cut() breaks the link (connections in flight close, new ones are turned
// away) until restore(), and tamper_next() rewrites the body of the control
// plane's next answer to a matching request, as a broken or future control
// plane would send it. One exchange per connection (workers send
// Connection: close), each on a thread of its own.
#pragma once

#include <atomic>
#include <utility>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace qf::test_support {

class link_proxy {
public:
  /// Listens on 127.0.0.1 (a port of its own) and forwards to
  /// 127.0.0.1:target_port.
  explicit link_proxy(uint16_t target_port);
  ~link_proxy();

  link_proxy(const link_proxy&) = delete;
  link_proxy& operator=(const link_proxy&) = delete;

  uint16_t port() const {
    return port_;
  }

  void retarget(uint16_t target_port) {
    target_ = target_port;
  }

  void cut();
  void restore();

  /// The body of the next answer to a request whose target starts with
  /// `prefix` goes through `edit` (Content-Length follows).
  void tamper_next(std::string prefix, std::function<std::string(std::string)> edit);

  /// Request targets seen, in order ("GET /worker/config").
  std::vector<std::string> requests() const;

private:
  void accept_loop();
  void serve(int client);

  int listener_ = -1;
  uint16_t port_ = 0;
  std::atomic<uint16_t> target_;
  std::atomic<bool> cut_{false};
  std::atomic<bool> stopping_{false};
  mutable std::mutex mtx_;
  std::set<int> open_; // sockets of exchanges in flight
  std::vector<std::string> requests_;
  std::string tamper_prefix_;
  std::function<std::string(std::string)> tamper_;
  std::thread acceptor_;
  std::vector<std::thread> exchanges_;
};

} // namespace qf::test_support
