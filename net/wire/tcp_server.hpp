// TCP listeners for the wire protocols (PostgreSQL, MySQL), served by a few
// event loops (io/event_loop), a thread each: a connection stays on the
// loop it was handed to, with TLS by OpenSSL on the same socket. Reading is credit-based: after each chunk delivered, the
// connection waits for read_more(), so a slow session never buffers a fast
// client's whole stream.
#pragma once

#include "io/event_loop.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace qf::wire {

/// One client connection; every method is safe from any thread.
class connection {
public:
  virtual ~connection() = default;
  virtual void write(std::string bytes) = 0;
  /// On its loop's thread only: keeps a copy of the bytes until the thread's
  /// current round of ready events ends, then sends what the socket takes
  /// and queues the rest; a small answer costs one send and no allocation.
  /// Everything else (write, close, start_tls, when_drained) sends the
  /// kept bytes first.
  virtual void send(std::string_view bytes) = 0;
  /// Sends what was written, then closes.
  virtual void close() = 0;
  /// Lets the next chunk of input through.
  virtual void read_more() = 0;
  /// After what was written, runs the TLS handshake; the handler hears
  /// on_tls_ready() and everything after is encrypted. `received`: the
  /// handshake's bytes the handler already took in.
  virtual void start_tls(std::string received) = 0;
  /// The loop this connection is served on, which the handler is called
  /// on: work posted there never runs beside the handler.
  virtual io::event_loop& loop() = 0;
  /// Bytes written but not sent yet: how far the client lags behind.
  virtual size_t pending_output() const = 0;
  /// Runs fn on its loop once everything written so far is sent; never,
  /// if the connection closes first.
  virtual void when_drained(std::function<void()> fn) = 0;
  /// On its loop's thread: whether the session may be closed to make room
  /// for a newcomer at maxConnections (nothing in flight, nothing of the
  /// client's held), and whether its client logged in (those that did not
  /// go first). A new connection is idle from its accept on.
  virtual void set_idle(bool idle, bool logged_in) = 0;
};

/// Receives a connection's input; called on its connection's loop.
class handler {
public:
  virtual ~handler() = default;
  /// The bytes are valid during the call only.
  virtual void on_data(std::string_view bytes) = 0;
  virtual void on_closed() = 0;
  virtual void on_tls_ready() = 0;
  /// The client hung up (or half-closed) while its input was held back,
  /// so the end of its stream will not be read until read_more(): the
  /// handler may end what it runs for a client that is gone.
  virtual void on_hang_up() {}
  /// The listener, at maxConnections, closes this idle connection to make
  /// room for a newcomer: the handler may write its goodbye now.
  virtual void on_evicted() {}
};

using handler_factory
  = std::function<std::shared_ptr<handler>(std::shared_ptr<connection>)>;

struct listener_options {
  std::string name; // for logs: "postgresWire"
  std::string address = "0.0.0.0";
  uint16_t port = 0;
  uint32_t max_connections = 1000;
  std::string tls_cert_file; // PEM; both set: start_tls() works
  std::string tls_key_file;
};

class service {
public:
  /// Serves connections on `threads` event loops, each on a thread of
  /// its own, handing them out in turn.
  explicit service(size_t threads = 1);
  ~service();

  service(const service&) = delete;
  service& operator=(const service&) = delete;

  /// Binds now and returns the port (the system's choice for port 0);
  /// throws std::runtime_error when the port is taken.
  uint16_t listen(const listener_options& opts, handler_factory factory);
  void start();
  void stop_accepting();

  /// Lets every loop run what was posted to it before this call (a
  /// statement's last page on its way to its session) and send what that
  /// wrote; waits at most `timeout`. A drain calls it once nothing is in
  /// flight, before the loops stop and drop what they hold.
  void settle(std::chrono::milliseconds timeout);

  void stop();

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace qf::wire
