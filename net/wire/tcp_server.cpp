// Asio acceptors and connections for the wire protocols.
#include "net/wire/tcp_server.hpp"

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

class listener : public std::enable_shared_from_this<listener> {
public:
  listener(asio::io_context& ioc, std::shared_ptr<listener_state> state)
    : ioc_(ioc), acceptor_(asio::make_strand(ioc)), state_(std::move(state)) {
    tcp::endpoint ep{asio::ip::make_address(state_->opts.address),
                     state_->opts.port};
    acceptor_.open(ep.protocol());
    acceptor_.set_option(asio::socket_base::reuse_address(true));
    acceptor_.bind(ep);
    acceptor_.listen(asio::socket_base::max_listen_connections);
  }

  void start() {
    accept();
  }

  void stop() {
    asio::post(acceptor_.get_executor(), [self = shared_from_this()] {
      boost::system::error_code ignored;
      self->acceptor_.close(ignored);
    });
  }

private:
  void accept() {
    acceptor_.async_accept(
      asio::make_strand(ioc_),
      [self = shared_from_this()](boost::system::error_code ec,
                                  tcp::socket socket) {
        if (ec == asio::error::operation_aborted || !self->acceptor_.is_open())
          return;
        if (!ec) {
          socket.set_option(tcp::no_delay(true), ec);
          if (self->state_->connections.load()
              >= self->state_->opts.max_connections) {
            // Over maxConnections: the socket is dropped, as QueryFlux does.
            boost::system::error_code ignored;
            socket.close(ignored);
          } else {
            auto conn = std::make_shared<tcp_connection>(std::move(socket),
                                                         self->state_);
            conn->start(self->state_->factory(conn));
          }
        }
        self->accept();
      });
  }

  asio::io_context& ioc_;
  tcp::acceptor acceptor_;
  std::shared_ptr<listener_state> state_;
};

} // namespace

struct service::impl {
  asio::io_context ioc;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>>
    work{ioc.get_executor()};
  std::vector<std::shared_ptr<listener>> listeners;
  std::vector<std::thread> threads;
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
  try {
    impl_->listeners.push_back(std::make_shared<listener>(impl_->ioc, state));
  } catch (const std::exception& e) {
    throw std::runtime_error(opts.name + ": cannot listen on " + opts.address
                             + ":" + std::to_string(opts.port) + ": "
                             + e.what());
  }
  spdlog::info("{} listening on {}:{}", opts.name, opts.address, opts.port);
}

void service::start(unsigned threads) {
  for (auto& l : impl_->listeners)
    l->start();
  for (unsigned i = 0; i < std::max(threads, 1u); ++i)
    impl_->threads.emplace_back([this] { impl_->ioc.run(); });
}

void service::stop_accepting() {
  for (auto& l : impl_->listeners)
    l->stop();
}

void service::stop() {
  stop_accepting();
  impl_->work.reset();
  impl_->ioc.stop();
  for (auto& t : impl_->threads)
    if (t.joinable())
      t.join();
  impl_->threads.clear();
  impl_->listeners.clear();
}

} // namespace qf::wire
