// Asio acceptors and connections for the wire protocols.
#include "net/wire/tcp_server.hpp"

#include "net/io/accept_loop.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <spdlog/spdlog.h>

#include <array>
#include <atomic>
#include <deque>
#include <optional>
#include <thread>
#include <vector>

namespace qf::wire {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

struct listener_state {
  asio::io_context* wire_thread = nullptr; // run by one thread
  listener_options opts;
  handler_factory factory;
  std::atomic<uint32_t> connections{0};
  std::unique_ptr<asio::ssl::context> tls; // null: no TLS on this listener
};

class tcp_connection;

/// The connections whose send() bytes wait for the end of the wire
/// thread's current round of ready events. Answers then leave together,
/// right before the thread waits again: a client with several connections
/// (pgbench, a pool) takes them in one wake-up, and the peers they wake
/// find the thread about to sleep rather than preempting its work.
struct send_round {
  std::vector<std::shared_ptr<tcp_connection>> holding;
  std::vector<std::shared_ptr<tcp_connection>> releasing;
};

thread_local send_round round_of_this_thread;

void hold_until_round_ends(std::shared_ptr<tcp_connection> conn);

class tcp_connection : public connection,
                       public std::enable_shared_from_this<tcp_connection> {
public:
  tcp_connection(tcp::socket socket, std::shared_ptr<listener_state> owner)
    : socket_(std::move(socket)), owner_(std::move(owner)) {
    owner_->connections.fetch_add(1);
  }

  ~tcp_connection() override {
    owner_->connections.fetch_sub(1);
  }

  tcp_connection(const tcp_connection&) = delete;
  tcp_connection& operator=(const tcp_connection&) = delete;

  void start(std::shared_ptr<handler> h) {
    boost::system::error_code ignored;
    socket_.non_blocking(true, ignored); // send() never waits
    on_thread([self = shared_from_this(), h] {
      self->handler_ = h;
      self->read();
    });
  }

  void write(std::string bytes) override {
    if (bytes.empty())
      return;
    pending_.fetch_add(bytes.size());
    // Inline when called on the wire thread (the PostgreSQL session),
    // posted from elsewhere (the MySQL session actors).
    on_thread([self = shared_from_this(), b = std::move(bytes)]() mutable {
      self->release_held();
      self->queue_.push_back(std::move(b));
      if (self->queue_.size() == 1)
        self->flush();
    });
  }

  void send(std::string_view bytes) override {
    if (bytes.empty())
      return;
    pending_.fetch_add(bytes.size());
    if (!sends_directly()) {
      queue_.emplace_back(bytes);
      if (queue_.size() == 1)
        flush();
      return;
    }
    if (held_.empty())
      hold_until_round_ends(shared_from_this());
    held_.append(bytes);
  }

  /// Sends what send() held: straight from the buffer when the socket
  /// takes it, the rest queued.
  void release_held() {
    if (held_.empty())
      return;
    std::string_view bytes = held_;
    if (sends_directly()) {
      boost::system::error_code ec;
      size_t sent = socket_.send(asio::buffer(bytes), 0, ec);
      // A failure is left to the queued write below, which shuts the
      // connection down from a completion.
      bytes.remove_prefix(ec ? 0 : sent);
      pending_.fetch_sub(held_.size() - bytes.size());
    }
    if (!bytes.empty()) {
      queue_.emplace_back(bytes);
      if (queue_.size() == 1)
        flush();
    }
    held_.clear();
    if (held_.capacity() > 64 * 1024) // after a burst of rows
      held_ = {};
  }

  asio::io_context& wire_thread() const {
    return *owner_->wire_thread;
  }

  void close() override {
    on_thread([self = shared_from_this()] {
      self->release_held();
      self->closing_ = true;
      if (self->queue_.empty())
        self->shutdown();
    });
  }

  void read_more() override {
    on_thread([self = shared_from_this()] {
      self->read();
    });
  }

  asio::any_io_executor executor() override {
    return socket_.get_executor();
  }

  size_t pending_output() const override {
    return pending_.load();
  }

  void when_drained(std::function<void()> fn) override {
    asio::post(socket_.get_executor(), [self = shared_from_this(), fn = std::move(fn)]() mutable {
      if (self->closed_)
        return;
      self->release_held();
      if (self->queue_.empty())
        fn();
      else
        self->drained_.push_back(std::move(fn));
    });
  }

  void start_tls() override {
    // Inline like read_more(), so that a read_more() right after it sees
    // the handshake pending.
    on_thread([self = shared_from_this()] {
      if (!self->owner_->tls) {
        self->shutdown();
        return;
      }
      self->release_held(); // the 'S' goes out in the clear
      self->tls_pending_ = true;
      if (self->queue_.empty())
        self->handshake();
    });
  }

private:
  bool sends_directly() const {
    return queue_.empty() && !tls_ && !tls_pending_ && !handshaking_ && !closing_ && !closed_;
  }

  /// Runs f at once on the wire thread, else posts it there. Not
  /// asio::dispatch: through the socket's type-erased executor, that
  /// allocates even when it runs f inline.
  template <class F>
  void on_thread(F&& f) {
    auto thread = owner_->wire_thread->get_executor();
    if (thread.running_in_this_thread())
      f();
    else
      asio::post(thread, std::forward<F>(f));
  }

  void handshake() {
    tls_pending_ = false;
    handshaking_ = true; // no read may run beside it
    tls_.emplace(socket_, *owner_->tls);
    tls_->async_handshake(
      asio::ssl::stream_base::server,
      [self = shared_from_this()](boost::system::error_code ec) {
        self->handshaking_ = false;
        if (ec) {
          spdlog::debug("{}: TLS handshake failed: {}", self->owner_->opts.name,
                        ec.message());
          self->shutdown();
          return;
        }
        if (self->handler_)
          self->handler_->on_tls_ready();
      });
  }

  void read() {
    // The handler asks again (read_more) once TLS is up.
    if (reading_ || closed_ || tls_pending_ || handshaking_)
      return;
    reading_ = true;
    auto done = [self = shared_from_this()](boost::system::error_code ec,
                                            size_t n) {
      self->reading_ = false;
      if (ec) {
        self->shutdown();
        return;
      }
      if (self->handler_)
        self->handler_->on_data({self->buffer_.data(), n});
    };
    if (tls_)
      tls_->async_read_some(asio::buffer(buffer_), std::move(done));
    else
      socket_.async_read_some(asio::buffer(buffer_), std::move(done));
  }

  void flush() {
    auto done = [self = shared_from_this()](boost::system::error_code ec,
                                            size_t) {
        if (ec) {
          self->shutdown();
          return;
        }
        self->pending_.fetch_sub(self->queue_.front().size());
        self->queue_.pop_front();
        // Posted, not called: one may write, and a write started from in
        // here would run beside the flush() below.
        if (self->queue_.empty() && !self->drained_.empty())
          asio::post(self->socket_.get_executor(),
                     [fns = std::exchange(self->drained_, {})]() mutable {
                       for (auto& fn : fns)
                         fn();
                     });
        if (!self->queue_.empty())
          self->flush();
        else if (self->closing_)
          self->shutdown();
        else if (self->tls_pending_)
          self->handshake(); // the 'S' went out in the clear; now TLS
      };
    if (tls_)
      asio::async_write(*tls_, asio::buffer(queue_.front()), std::move(done));
    else
      asio::async_write(socket_, asio::buffer(queue_.front()), std::move(done));
  }

  void shutdown() {
    if (closed_)
      return;
    closed_ = true;
    boost::system::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    // tls_ lives as long as the connection: a TLS operation may still be
    // unwinding through it when this runs from its completion handler.
    drained_.clear(); // they hold their session
    held_.clear();
    if (auto h = std::exchange(handler_, nullptr))
      h->on_closed();
  }

  tcp::socket socket_;
  std::shared_ptr<listener_state> owner_;
  std::shared_ptr<handler> handler_;
  std::array<char, 16384> buffer_;
  std::deque<std::string> queue_;
  std::string held_; // send()'s bytes, until the round of events ends
  std::atomic<size_t> pending_{0}; // bytes held, queued and in posted writes
  std::vector<std::function<void()>> drained_;
  std::optional<asio::ssl::stream<tcp::socket&>> tls_;
  bool tls_pending_ = false; // start_tls() waits for the 'S' to be sent
  bool handshaking_ = false;
  bool reading_ = false;
  bool closing_ = false;
  bool closed_ = false;
};

void hold_until_round_ends(std::shared_ptr<tcp_connection> conn) {
  auto& round = round_of_this_thread;
  round.holding.push_back(std::move(conn));
  if (round.holding.size() > 1)
    return;
  // Posted now, it runs after the handlers already due in this round.
  asio::post(round.holding.back()->wire_thread(), [] {
    auto& r = round_of_this_thread;
    r.releasing.swap(r.holding); // a hold from here on starts the next round
    for (auto& c : r.releasing)
      c->release_held();
    r.releasing.clear();
  });
}

} // namespace

// One thread, as pgbouncer runs one event loop: a PostgreSQL statement on
// the fast lane never leaves it, and nothing needs a strand.
struct service::impl : io::listener_group {
  impl() : listener_group(true) {
    // nop
  }
};

service::service() : impl_(std::make_unique<impl>()) {
  // nop
}

service::~service() {
  stop();
}

void service::listen(const listener_options& opts, handler_factory factory) {
  auto state = std::make_shared<listener_state>();
  state->wire_thread = &impl_->context();
  state->opts = opts;
  state->factory = std::move(factory);
  if (!opts.tls_cert_file.empty()) {
    state->tls = std::make_unique<asio::ssl::context>(
      asio::ssl::context::tls_server);
    state->tls->set_options(asio::ssl::context::default_workarounds
                            | asio::ssl::context::no_sslv2
                            | asio::ssl::context::no_sslv3
                            | asio::ssl::context::no_tlsv1
                            | asio::ssl::context::no_tlsv1_1);
    try {
      state->tls->use_certificate_chain_file(opts.tls_cert_file);
      state->tls->use_private_key_file(opts.tls_key_file,
                                       asio::ssl::context::pem);
    } catch (const std::exception& e) {
      throw std::runtime_error(opts.name + ": cannot load TLS certificate "
                               "or key: " + e.what());
    }
  }
  impl_->listen(
    opts.name, opts.address, opts.port,
    [state](tcp::socket socket) {
      if (state->connections.load() >= state->opts.max_connections) {
        // Over maxConnections: the socket is dropped, as QueryFlux does.
        boost::system::error_code ignored;
        socket.close(ignored);
        return;
      }
      auto conn = std::make_shared<tcp_connection>(std::move(socket), state);
      conn->start(state->factory(conn));
    });
}

void service::start() {
  impl_->start(1);
}

void service::stop_accepting() {
  impl_->stop_accepting();
}

void service::stop() {
  impl_->stop();
}

} // namespace qf::wire
