// Listeners and connections for the wire protocols on the wire threads'
// event loops: plain sockets, and TLS by OpenSSL on the same descriptor.
#include "net/wire/tcp_server.hpp"

#include "io/spare_descriptor.hpp"
#include "net/wire/tcp_connection.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace qf::wire {

namespace {

using detail::listener_state;
using detail::tcp_connection;
using detail::tls_context;

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
      // At the limit the newcomer takes the place of the connection idle
      // the longest (nothing in flight, nothing of its client's held);
      // dropped only when every connection is busy.
      if (state_->connections.load() >= state_->opts.max_connections
          && !io::idle_registry::evict_longest_idle(state_->open_views)) {
        ::close(fd);
        continue;
      }
      auto conn = std::make_shared<tcp_connection>(fd, state_,
                                                   state_->dealt++ % state_->loops.size());
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
  for (size_t i = 0; i < state->loops.size(); ++i) {
    state->open.push_back(std::make_unique<io::idle_registry>());
    state->open_views.push_back(state->open.back().get());
  }
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

void service::settle(std::chrono::milliseconds timeout) {
  struct latch {
    std::mutex mtx;
    std::condition_variable cv;
    size_t left;
  };
  auto done = std::make_shared<latch>();
  done->left = impl_->loops.size();
  for (auto& loop : impl_->loops)
    // Posted after the pages already posted (tasks run in order); then
    // once more, so that the round between ends and sends what was held.
    loop->post([done, l = loop.get()] {
      l->post([done] {
        std::lock_guard guard{done->mtx};
        if (--done->left == 0)
          done->cv.notify_all();
      });
    });
  std::unique_lock lock{done->mtx};
  done->cv.wait_for(lock, timeout, [&] { return done->left == 0; });
}

void service::stop() {
  stop_accepting();
  for (auto& loop : impl_->loops)
    loop->stop();
  impl_->acceptors.clear();
}

} // namespace qf::wire
