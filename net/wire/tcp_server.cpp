// Listeners and connections for the wire protocols on the wire threads'
// event loops: plain sockets, and TLS by OpenSSL on the same descriptor.
#include "net/wire/tcp_server.hpp"

#include "io/spare_descriptor.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <stdexcept>
#include <vector>

namespace qf::wire {

namespace {

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
};

tls_context load_tls(const listener_options& opts) {
  tls_context ctx{SSL_CTX_new(TLS_server_method())};
  if (!ctx)
    throw std::runtime_error(opts.name + ": cannot create a TLS context");
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), opts.tls_cert_file.c_str()) != 1
      || SSL_CTX_use_PrivateKey_file(ctx.get(), opts.tls_key_file.c_str(), SSL_FILETYPE_PEM)
           != 1
      || SSL_CTX_check_private_key(ctx.get()) != 1) {
    char why[256];
    ERR_error_string_n(ERR_get_error(), why, sizeof why);
    ERR_clear_error();
    throw std::runtime_error(opts.name + ": cannot load TLS certificate or key: " + why);
  }
  return ctx;
}

class tcp_connection;

/// The connections whose send() bytes wait for the end of the wire
/// thread's current round of ready events. Answers then leave together,
/// right before the thread waits again: a client with several connections
/// (pgbench, a pool) takes them in one wake-up, and the peers they wake
/// find the thread about to sleep rather than preempting its work.
thread_local std::vector<std::shared_ptr<tcp_connection>> held_this_round;
thread_local std::vector<std::shared_ptr<tcp_connection>> releasing_this_round;

void hold_until_round_ends(std::shared_ptr<tcp_connection> conn, io::event_loop& loop);

class tcp_connection : public connection,
                       public io::watcher,
                       public std::enable_shared_from_this<tcp_connection> {
public:
  tcp_connection(int fd, std::shared_ptr<listener_state> owner,
                 std::shared_ptr<io::event_loop> loop)
    : fd_(fd), owner_(std::move(owner)), loop_(std::move(loop)) {
    owner_->connections.fetch_add(1);
  }

  ~tcp_connection() override {
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
    loop().dispatch([self = shared_from_this()] {
      self->release_held();
      self->closing_ = true;
      if (self->queue_.empty())
        self->shutdown();
    });
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
};

void hold_until_round_ends(std::shared_ptr<tcp_connection> conn, io::event_loop& loop) {
  held_this_round.push_back(std::move(conn));
  if (held_this_round.size() > 1)
    return;
  loop.at_round_end([] {
    // Swapped, not moved out: both keep their capacity for the next rounds.
    releasing_this_round.swap(held_this_round);
    for (auto& c : releasing_this_round)
      c->release_held();
    releasing_this_round.clear();
  });
}

/// A listening socket; accepts on the loop whenever it is readable.
class acceptor : public io::watcher, public std::enable_shared_from_this<acceptor> {
public:
  explicit acceptor(std::shared_ptr<listener_state> state) : state_(std::move(state)) {
    // nop
  }

  void bind_and_listen() {
    const auto& opts = state_->opts;
    auto fail = [&](const std::string& why) {
      throw std::runtime_error(opts.name + ": cannot listen on " + opts.address + ":"
                               + std::to_string(opts.port) + ": " + why);
    };
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV;
    addrinfo* found = nullptr;
    auto port = std::to_string(opts.port);
    if (int rc = ::getaddrinfo(opts.address.c_str(), port.c_str(), &hints, &found); rc != 0)
      fail(::gai_strerror(rc));
    std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> guard{found, ::freeaddrinfo};
    int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
      fail(std::strerror(errno));
    int on = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    // Linux copies it to every accepted socket: a system call less per
    // connection than setting it on each.
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    if (::bind(fd, found->ai_addr, found->ai_addrlen) != 0
        || ::listen(fd, SOMAXCONN) != 0) {
      int err = errno;
      ::close(fd);
      fail(std::strerror(err));
    }
    listen_fd_ = fd;
    sockaddr_storage bound{};
    socklen_t length = sizeof bound;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) == 0)
      port_ = ntohs(bound.ss_family == AF_INET6
                      ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                      : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    spdlog::info("{} listening on {}:{}", opts.name, opts.address, port_);
  }

  /// The port bound: opts.port, or the one the system chose for 0.
  uint16_t port() const {
    return port_;
  }

  /// On the first loop.
  void start() {
    started_ = true;
    watch_ = state_->loops.front()->add(listen_fd_, weak_from_this());
    if (!watch_)
      spdlog::error("{}: cannot watch the listening socket", state_->opts.name);
  }

  ~acceptor() override {
    if (!started_ && listen_fd_ >= 0)
      ::close(listen_fd_);
  }

  /// From any thread.
  void stop() {
    state_->loops.front()->dispatch([self = shared_from_this()] { self->watch_.close(); });
  }

  void on_ready(uint32_t) override {
    for (;;) {
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED)
          continue;
        if ((errno == EMFILE || errno == ENFILE) && turn_away_one())
          continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
          return;
        if (errno != EMFILE && errno != ENFILE)
          spdlog::warn("{}: accept failed: {}", state_->opts.name, std::strerror(errno));
        // Out of descriptors with the spare gone (another thread took the
        // one it let go), ENOMEM and the like: the backlog gets no edge
        // until a newer connection comes, so this listener looks again.
        return try_again_later();
      }
      if (std::exchange(out_of_descriptors_, false))
        spdlog::info("{}: accepting connections again", state_->opts.name);
      if (state_->connections.load() >= state_->opts.max_connections) {
        ::close(fd); // over maxConnections: dropped, as QueryFlux does
        continue;
      }
      const auto& loops = state_->loops;
      auto conn = std::make_shared<tcp_connection>(
        fd, state_, loops[state_->dealt++ % loops.size()]);
      conn->loop().dispatch([state = state_, conn] { serve(*state, conn); });
    }
  }

private:
  /// On the connection's loop: its session starts.
  static void serve(listener_state& state, const std::shared_ptr<tcp_connection>& conn) {
    std::shared_ptr<handler> session;
    try {
      session = state.factory(conn);
    } catch (const std::exception& e) { // that connection goes, the listener stays
      spdlog::error("{}: cannot start a session: {}", state.opts.name, e.what());
      return; // its descriptor closes with it
    }
    conn->start(std::move(session));
  }

  void try_again_later() {
    if (std::exchange(retry_armed_, true))
      return;
    state_->loops.front()->after(std::chrono::milliseconds(100), [weak = weak_from_this()] {
      auto self = weak.lock();
      if (!self || !self->watch_)
        return; // stopped: its descriptor is closed
      self->retry_armed_ = false;
      self->on_ready(0);
    });
  }

  /// Out of descriptors: the connection waiting first is turned away.
  bool turn_away_one() {
    if (!std::exchange(out_of_descriptors_, true))
      spdlog::warn("{}: out of file descriptors: turning connections away",
                   state_->opts.name);
    return spare_.turn_away_one(listen_fd_);
  }

  std::shared_ptr<listener_state> state_;
  int listen_fd_ = -1; // owned by watch_ once started
  uint16_t port_ = 0;
  bool started_ = false;
  io::watch watch_;
  io::spare_descriptor spare_;
  bool out_of_descriptors_ = false;
  bool retry_armed_ = false;
};

} // namespace

// A thread per loop. A statement on the fast lane never leaves its
// connection's loop: its backend connection is opened and reused there.
struct service::impl {
  std::vector<std::shared_ptr<io::event_loop>> loops;
  std::vector<std::shared_ptr<acceptor>> acceptors;
};

service::service(size_t threads) : impl_(std::make_unique<impl>()) {
  for (size_t i = 0; i < std::max<size_t>(threads, 1); ++i)
    impl_->loops.push_back(io::event_loop::create());
}

service::~service() {
  stop();
}

uint16_t service::listen(const listener_options& opts, handler_factory factory) {
  auto state = std::make_shared<listener_state>();
  state->loops = impl_->loops;
  state->opts = opts;
  state->factory = std::move(factory);
  if (!opts.tls_cert_file.empty())
    state->tls = load_tls(opts);
  auto a = std::make_shared<acceptor>(state);
  a->bind_and_listen();
  impl_->loops.front()->dispatch([a] { a->start(); }); // runs once the loop starts
  auto port = a->port();
  impl_->acceptors.push_back(std::move(a));
  return port;
}

void service::start() {
  for (auto& loop : impl_->loops)
    loop->start();
}

void service::stop_accepting() {
  for (auto& a : impl_->acceptors)
    a->stop();
}

void service::stop() {
  stop_accepting();
  for (auto& loop : impl_->loops)
    loop->stop();
  impl_->acceptors.clear();
}

} // namespace qf::wire
