// One client connection of a wire listener (PostgreSQL, MySQL) on its event
// loop: plain or TLS by OpenSSL on the same socket, credit-based reads,
// answers held for the end of the loop's round. Internal to net/wire:
// included by tcp_server.cpp and tcp_connection.cpp only.
#pragma once

#include "io/idle_registry.hpp"
#include "net/wire/tcp_server.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <optional>
#include <vector>

namespace qf::wire::detail {

struct tls_context_deleter {
  void operator()(SSL_CTX* ctx) const {
    SSL_CTX_free(ctx);
  }
};
using tls_context = std::unique_ptr<SSL_CTX, tls_context_deleter>;

struct listener_state {
  /// The service's loops: the first accepts, each serves every n-th
  /// connection.
  std::vector<std::shared_ptr<io::event_loop>> loops;
  size_t dealt = 0; // on the first loop's thread
  listener_options opts;
  handler_factory factory;
  std::atomic<uint32_t> connections{0};
  tls_context tls; // null: no TLS on this listener
  /// Every open connection, to find the longest idle at the limit: a
  /// registry per loop, whose connections alone come and go there.
  std::vector<std::unique_ptr<io::idle_registry>> open;
  std::vector<io::idle_registry*> open_views; // the same, for evict_longest_idle
};

class tcp_connection;

/// Keeps conn's send() bytes until the loop's current round of ready
/// events ends (see tcp_connection.cpp).
void hold_until_round_ends(std::shared_ptr<tcp_connection> conn, io::event_loop& loop);

class tcp_connection : public connection,
                       public io::evictable,
                       public io::watcher,
                       public std::enable_shared_from_this<tcp_connection> {
public:
  /// Served on the owner's loop number `loop`.
  tcp_connection(int fd, std::shared_ptr<listener_state> owner, size_t loop)
    : fd_(fd),
      owner_(std::move(owner)),
      loop_(owner_->loops[loop]),
      registry_(*owner_->open[loop]) {
    owner_->connections.fetch_add(1);
  }

  ~tcp_connection() override {
    if (registered_)
      registry_.leave(*registered_);
    if (ssl_)
      SSL_free(ssl_);
    if (!started_) // the watch owns it from start() on
      ::close(fd_);
    owner_->connections.fetch_sub(1);
  }

  tcp_connection(const tcp_connection&) = delete;
  tcp_connection& operator=(const tcp_connection&) = delete;

  /// On its loop, with the handler the factory made.
  void start(std::shared_ptr<handler> h) {
    handler_ = std::move(h);
    started_ = true;
    registered_ = registry_.join(std::static_pointer_cast<io::evictable>(shared_from_this()));
    watch_ = loop_->add(fd_, weak_from_this());
    if (!watch_) {
      spdlog::warn("{}: cannot watch a connection: {}", owner_->opts.name,
                   std::strerror(errno));
      return shutdown();
    }
    reading_ = true;
    read();
  }

  // -- connection ---------------------------------------------------------------

  void write(std::string bytes) override {
    if (bytes.empty())
      return;
    pending_.fetch_add(bytes.size());
    // Inline when called on the connection's loop (the wire sessions),
    // posted from elsewhere (the MySQL session actors).
    loop().dispatch([self = shared_from_this(), b = std::move(bytes)]() mutable {
      self->release_held();
      self->queue_.push_back(std::move(b));
      self->flush();
    });
  }

  void send(std::string_view bytes) override {
    if (bytes.empty())
      return;
    pending_.fetch_add(bytes.size());
    if (!sends_directly()) {
      queue_.emplace_back(bytes);
      flush();
      return;
    }
    if (held_.empty())
      hold_until_round_ends(shared_from_this(), loop());
    held_.append(bytes);
  }

  void close() override {
    loop().dispatch([self = shared_from_this()] { self->close_soon(); });
  }

  void read_more() override {
    loop().dispatch([self = shared_from_this()] {
      self->reading_ = true;
      self->read();
    });
  }

  void start_tls(std::string received) override {
    // Inline like read_more(), so that a read_more() right after it sees
    // the handshake pending.
    loop().dispatch([self = shared_from_this(), received = std::move(received)]() mutable {
      if (!self->owner_->tls)
        return self->shutdown();
      self->release_held(); // the 'S' goes out in the clear
      self->tls_pending_ = true;
      self->tls_received_ = std::move(received);
      if (self->queue_.empty())
        self->handshake();
    });
  }

  io::event_loop& loop() override {
    return *loop_;
  }

  size_t pending_output() const override {
    return pending_.load();
  }

  void when_drained(std::function<void()> fn) override {
    loop().post([self = shared_from_this(), fn = std::move(fn)]() mutable {
      if (self->closed_)
        return;
      self->release_held();
      if (self->queue_.empty())
        fn();
      else
        self->drained_.push_back(std::move(fn));
    });
  }

  void set_idle(bool idle, bool client_logged_in) override {
    using standing = io::idle_registry::standing;
    auto where = !idle              ? standing::busy
                 : client_logged_in ? standing::idle_logged_in
                                    : standing::idle_anonymous;
    if (where == standing_ || !registered_)
      return;
    standing_ = where;
    registry_.stand(*registered_, where);
  }

  // -- eviction -----------------------------------------------------------------

  /// Chosen to make room: closes at once unless a statement came
  /// meanwhile. Its goodbye goes out only as far as the socket takes it
  /// now: a client that reads nothing (or stalls its TLS handshake) must
  /// not keep the descriptor that was to be freed.
  void evict() override {
    loop().dispatch([self = shared_from_this()] {
      if (self->standing_ == io::idle_registry::standing::busy || self->closed_)
        return; // a statement came meanwhile: it goes on
      if (!self->handshaking_ && !self->tls_pending_) {
        self->tell_handler([](handler& h) { h.on_evicted(); });
        self->release_held();
        self->flush();
      }
      self->shutdown();
    });
  }

  // -- readiness ----------------------------------------------------------------

  void on_ready(uint32_t events) override {
    if (closed_)
      return;
    if (events & io::input_events)
      readable_ = true;
    if (events & io::hang_up_events)
      hung_up_ = true;
    if (events & io::output_events)
      writable_ = true;
    if (handshaking_)
      return step_handshake();
    if (hung_up_ && !reading_ && handler_ && !std::exchange(hang_up_told_, true))
      tell_handler([](handler& h) { h.on_hang_up(); });
    if (writable_ && !queue_.empty())
      flush();
    if (readable_ && reading_)
      read();
  }

  /// Sends what send() held: straight from the buffer when the socket
  /// takes it, the rest queued.
  void release_held() {
    if (held_.empty())
      return;
    std::string_view bytes = held_;
    if (sends_directly()) {
      ssize_t sent = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      // A failure is left to the queued write below, which sees it again.
      if (sent > 0) {
        bytes.remove_prefix(static_cast<size_t>(sent));
        pending_.fetch_sub(static_cast<size_t>(sent));
      }
    }
    if (!bytes.empty()) {
      queue_.emplace_back(bytes);
      flush();
    }
    held_.clear();
    if (held_.capacity() > 64 * 1024) // after a burst of rows
      held_ = {};
  }

private:
  bool sends_directly() const {
    return queue_.empty() && writable_ && !ssl_ && !tls_pending_ && !closing_ && !closed_;
  }

  bool can_read() {
    // OpenSSL may hold decrypted input that no epoll event will announce.
    if (ssl_ && !readable_ && SSL_has_pending(ssl_))
      readable_ = true;
    return reading_ && readable_ && !closed_ && !tls_pending_ && !handshaking_;
  }

  /// Reads while the handler wants input and the socket has some. A read
  /// that comes back short emptied the socket: the next waits for epoll,
  /// not for an EAGAIN.
  void read() {
    if (in_read_)
      return; // the loop below goes on
    in_read_ = true;
    // A bounded number of chunks, then the others get their turn.
    for (int chunk = 0; chunk < 16 && can_read(); ++chunk) {
      ssize_t n = ssl_ ? read_tls() : read_plain();
      if (n <= 0)
        break;
      reading_ = false; // until read_more()
      tell_handler([&](handler& h) { h.on_data({buffer_.data(), static_cast<size_t>(n)}); });
    }
    in_read_ = false;
    if (can_read())
      loop().post([self = shared_from_this()] { self->read(); });
  }

  /// Calls the handler, if any, keeping it alive through the call: what it
  /// does may close this connection, which lets go of it. If it throws,
  /// its session is in a state nobody planned, so the connection closes
  /// (the session hears on_closed) and the loop's other connections go on.
  template <class Call>
  void tell_handler(Call&& call) {
    auto h = handler_;
    if (!h)
      return;
    try {
      call(*h);
    } catch (const std::exception& e) {
      spdlog::error("{}: a session failed, its connection closes: {}", owner_->opts.name,
                    e.what());
      shutdown();
    }
  }

  /// Bytes read; 0 when there are none for now; -1 after shutting down.
  ssize_t read_plain() {
    ssize_t n = ::recv(fd_, buffer_.data(), buffer_.size(), 0);
    if (n > 0) {
      if (static_cast<size_t>(n) < buffer_.size() && !hung_up_)
        readable_ = false;
      return n;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      readable_ = errno == EINTR;
      return 0;
    }
    if (n == 0)
      end_of_input();
    else
      shutdown(); // the connection broke
    return -1;
  }

  ssize_t read_tls() {
    ERR_clear_error();
    int n = SSL_read(ssl_, buffer_.data(), static_cast<int>(buffer_.size()));
    if (n > 0)
      return n; // OpenSSL may hold more: read until it says WANT_READ
    switch (SSL_get_error(ssl_, n)) {
      case SSL_ERROR_WANT_READ:
        readable_ = false;
        return 0;
      case SSL_ERROR_WANT_WRITE:
        writable_ = false; // retried on the next event
        return 0;
      case SSL_ERROR_ZERO_RETURN:
        end_of_input();
        return -1;
      default: // broken
        shutdown();
        return -1;
    }
  }

  /// Writes the queue while the socket takes it.
  void flush() {
    while (!queue_.empty() && writable_ && !closed_ && !handshaking_) {
      auto& front = queue_.front();
      size_t left = front.size() - front_sent_;
      ssize_t n;
      if (ssl_) {
        ERR_clear_error();
        int r = SSL_write(ssl_, front.data() + front_sent_, static_cast<int>(left));
        if (r <= 0) {
          int err = SSL_get_error(ssl_, r);
          if (err == SSL_ERROR_WANT_WRITE || err == SSL_ERROR_WANT_READ) {
            writable_ = false;
            return;
          }
          return shutdown();
        }
        n = r;
      } else {
        n = ::send(fd_, front.data() + front_sent_, left, MSG_NOSIGNAL);
        if (n < 0) {
          if (errno == EAGAIN || errno == EWOULDBLOCK) {
            writable_ = false;
            return;
          }
          if (errno == EINTR)
            continue;
          return shutdown();
        }
      }
      pending_.fetch_sub(static_cast<size_t>(n));
      front_sent_ += static_cast<size_t>(n);
      if (front_sent_ == front.size()) {
        queue_.pop_front();
        front_sent_ = 0;
      }
    }
    if (!queue_.empty() || closed_)
      return;
    // Posted, not called: one may write, and flush() may be below it.
    if (!drained_.empty())
      loop().post([fns = std::exchange(drained_, {})]() mutable {
        for (auto& fn : fns)
          fn();
      });
    if (closing_)
      shutdown();
    else if (tls_pending_)
      handshake(); // the 'S' went out in the clear; now TLS
  }

  void handshake() {
    tls_pending_ = false;
    ssl_ = SSL_new(owner_->tls.get());
    if (!ssl_ || !attach_socket())
      return shutdown();
    SSL_set_accept_state(ssl_);
    SSL_set_mode(ssl_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    handshaking_ = true; // no read or write may run beside it
    step_handshake();
  }

  /// The socket under TLS; bytes already received are read first, through
  /// a buffering BIO in front of the socket that holds them.
  bool attach_socket() {
    if (tls_received_.empty())
      return SSL_set_fd(ssl_, fd_) == 1;
    BIO* buffered = BIO_new(BIO_f_buffer());
    BIO* socket_in = BIO_new_socket(fd_, BIO_NOCLOSE);
    BIO* socket_out = BIO_new_socket(fd_, BIO_NOCLOSE);
    if (!buffered || !socket_in || !socket_out
        || BIO_set_buffer_read_data(buffered, tls_received_.data(),
                                    static_cast<long>(tls_received_.size()))
             != 1) {
      BIO_free(buffered);
      BIO_free(socket_in);
      BIO_free(socket_out);
      return false;
    }
    tls_received_.clear();
    SSL_set_bio(ssl_, BIO_push(buffered, socket_in), socket_out); // owns both
    return true;
  }

  void step_handshake() {
    ERR_clear_error();
    int r = SSL_do_handshake(ssl_);
    if (r == 1) {
      handshaking_ = false;
      readable_ = true; // the client's first bytes may have come with it
      flush();
      tell_handler([](handler& h) { h.on_tls_ready(); });
      return;
    }
    switch (SSL_get_error(ssl_, r)) {
      case SSL_ERROR_WANT_READ:
        readable_ = false;
        return;
      case SSL_ERROR_WANT_WRITE:
        writable_ = false;
        return;
      default: {
        char why[256];
        ERR_error_string_n(ERR_peek_error(), why, sizeof why);
        spdlog::debug("{}: TLS handshake failed: {}", owner_->opts.name, why);
        return shutdown();
      }
    }
  }

  /// Sends what was written, then closes; a client that does not read it
  /// within close_deadline (or is in its TLS handshake) is cut off.
  void close_soon() {
    release_held();
    closing_ = true;
    if (queue_.empty() || handshaking_)
      return shutdown();
    loop().after(close_deadline, [weak = weak_from_this()] {
      if (auto self = weak.lock())
        self->shutdown();
    });
  }

  static constexpr std::chrono::seconds close_deadline{10};

  /// The client ended its side of the stream. It may still read: what it
  /// is owed goes out, as far as the socket takes it now, then the
  /// connection closes. (Closing at once lost an answer held for the
  /// round's end.)
  void end_of_input() {
    release_held();
    shutdown();
  }

  void shutdown() {
    if (closed_)
      return;
    closed_ = true;
    watch_.close(); // the descriptor with it
    drained_.clear(); // they hold their session
    held_.clear();
    queue_.clear();
    front_sent_ = 0;
    if (auto h = std::exchange(handler_, nullptr))
      h->on_closed();
  }

  const int fd_;
  std::shared_ptr<listener_state> owner_;
  std::shared_ptr<io::event_loop> loop_; // the one this connection is served on
  io::watch watch_;
  std::shared_ptr<handler> handler_;
  std::array<char, 16384> buffer_;
  std::deque<std::string> queue_;
  size_t front_sent_ = 0; // of queue_.front()
  std::string held_;      // send()'s bytes, until the round of events ends
  std::atomic<size_t> pending_{0}; // bytes held and queued
  std::vector<std::function<void()>> drained_;
  SSL* ssl_ = nullptr; // once the handshake starts
  // What epoll said last: the socket may have input, may take output.
  bool readable_ = true;
  bool hung_up_ = false; // epoll said the client closed its end
  bool writable_ = true;
  bool reading_ = false; // the handler wants input
  bool in_read_ = false;
  bool started_ = false;
  bool tls_pending_ = false; // start_tls() waits for the 'S' to be sent
  bool hang_up_told_ = false; // on_hang_up() comes once
  std::string tls_received_; // the handshake's first bytes, read before it
  bool handshaking_ = false;
  bool closing_ = false;
  bool closed_ = false;
  io::idle_registry& registry_; // its loop's
  std::optional<io::idle_registry::entry> registered_;
  /// What set_idle() said last; idle, not logged in, from the accept on.
  io::idle_registry::standing standing_ = io::idle_registry::standing::idle_anonymous;
};

} // namespace qf::wire::detail
