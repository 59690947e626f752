// Asio acceptors and connections for the wire protocols.
#include "net/wire/tcp_server.hpp"

#include "net/io/accept_loop.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
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
  listener_options opts;
  handler_factory factory;
  std::atomic<uint32_t> connections{0};
};

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
    asio::dispatch(socket_.get_executor(), [self = shared_from_this(), h] {
      self->handler_ = h;
      self->read();
    });
  }

  void write(std::string bytes) override {
    if (bytes.empty())
      return;
    asio::post(socket_.get_executor(),
               [self = shared_from_this(), b = std::move(bytes)]() mutable {
                 self->queue_.push_back(std::move(b));
                 if (self->queue_.size() == 1)
                   self->flush();
               });
  }

  void close() override {
    asio::post(socket_.get_executor(), [self = shared_from_this()] {
      self->closing_ = true;
      if (self->queue_.empty())
        self->shutdown();
    });
  }

  void read_more() override {
    asio::post(socket_.get_executor(), [self = shared_from_this()] {
      self->read();
    });
  }

private:
  void read() {
    if (reading_ || closed_)
      return;
    reading_ = true;
    socket_.async_read_some(
      asio::buffer(buffer_),
      [self = shared_from_this()](boost::system::error_code ec, size_t n) {
        self->reading_ = false;
        if (ec) {
          self->shutdown();
          return;
        }
        if (self->handler_)
          self->handler_->on_data(std::string(self->buffer_.data(), n));
      });
  }

  void flush() {
    asio::async_write(
      socket_, asio::buffer(queue_.front()),
      [self = shared_from_this()](boost::system::error_code ec, size_t) {
        if (ec) {
          self->shutdown();
          return;
        }
        self->queue_.pop_front();
        if (!self->queue_.empty())
          self->flush();
        else if (self->closing_)
          self->shutdown();
      });
  }

  void shutdown() {
    if (closed_)
      return;
    closed_ = true;
    boost::system::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    if (auto h = std::exchange(handler_, nullptr))
      h->on_closed();
  }

  tcp::socket socket_;
  std::shared_ptr<listener_state> owner_;
  std::shared_ptr<handler> handler_;
  std::array<char, 16384> buffer_;
  std::deque<std::string> queue_;
  bool reading_ = false;
  bool closing_ = false;
  bool closed_ = false;
};

} // namespace

struct service::impl {
  io::io_threads io;
  std::vector<std::function<void()>> stoppers;
};

service::service() : impl_(std::make_unique<impl>()) {
  // nop
}

service::~service() {
  stop();
}

void service::listen(const listener_options& opts, handler_factory factory) {
  auto state = std::make_shared<listener_state>();
  state->opts = opts;
  state->factory = std::move(factory);
  impl_->stoppers.push_back(io::listen(
    impl_->io.ioc, opts.name, opts.address, opts.port,
    [state](tcp::socket socket) {
      if (state->connections.load() >= state->opts.max_connections) {
        // Over maxConnections: the socket is dropped, as QueryFlux does.
        boost::system::error_code ignored;
        socket.close(ignored);
        return;
      }
      auto conn = std::make_shared<tcp_connection>(std::move(socket), state);
      conn->start(state->factory(conn));
    }));
}

void service::start(unsigned threads) {
  impl_->io.start(threads);
}

void service::stop_accepting() {
  for (auto& stop : impl_->stoppers)
    stop();
}

void service::stop() {
  stop_accepting();
  impl_->io.stop();
  impl_->stoppers.clear();
}

} // namespace qf::wire
