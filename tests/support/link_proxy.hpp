// A TCP forwarder between one worker and its control plane, for fleet tests:
// cut() breaks the link (connections in flight close, new ones are turned
// away) until restore(), and tamper_with() rewrites the control plane's
// answers to matching requests (and those requests' targets), as a broken
// or future control plane would send them. One exchange per connection
// (workers send Connection: close), each on a thread of its own that ends
// with it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <utility>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
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

  struct tamper {
    /// The body of each 200 answer (Content-Length follows).
    std::function<std::string(std::string)> body;
    /// The request's target on its way to the control plane (optional).
    std::function<std::string(std::string)> target;
  };

  /// Until clear_tamper(), requests whose path starts with `prefix` and
  /// their answers go through `t`.
  void tamper_with(std::string prefix, tamper t);
  void clear_tamper();

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
  std::optional<tamper> tamper_;
  std::thread acceptor_;
  /// Exchanges under way, each on a detached thread of its own.
  size_t exchanges_ = 0;
  std::condition_variable all_done_;
};

} // namespace qf::test_support
