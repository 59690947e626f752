// The HTTP listeners' io_context, run by a few threads with each socket on
// its own strand, and an accept loop that hands each socket to a callback.
// (The wire listeners run on io::event_loop instead.) Header-only Asio:
// include only from Asio translation units.
#pragma once

#include "io/spare_descriptor.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <spdlog/spdlog.h>

#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace qf::io {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

class io_threads {
public:
  asio::io_context ioc;

  io_threads() = default;

  io_threads(const io_threads&) = delete;
  io_threads& operator=(const io_threads&) = delete;

  ~io_threads() {
    stop();
  }

  void start(unsigned count) {
    for (unsigned i = 0; i < std::max(count, 1u); ++i)
      threads_.emplace_back([this] { ioc.run(); });
  }

  void stop() {
    work_.reset();
    ioc.stop();
    for (auto& t : threads_)
      if (t.joinable())
        t.join();
    threads_.clear();
  }

private:
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>>
    work_{ioc.get_executor()};
  std::vector<std::thread> threads_;
};

/// Accepts until stopped; on_socket gets each socket with TCP_NODELAY set.
template <class OnSocket>
class accept_loop : public std::enable_shared_from_this<accept_loop<OnSocket>> {
public:
  /// Binds at once, so a taken port fails at start with a clear message.
  /// Each socket comes on a strand of its own.
  accept_loop(asio::io_context& ioc, const std::string& name,
              const std::string& address, uint16_t port, OnSocket on_socket)
    : ioc_(ioc), acceptor_(asio::make_strand(ioc_)), name_(name),
      on_socket_(std::move(on_socket)) {
    try {
      tcp::endpoint ep{asio::ip::make_address(address), port};
      acceptor_.open(ep.protocol());
      acceptor_.set_option(asio::socket_base::reuse_address(true));
      acceptor_.bind(ep);
      acceptor_.listen(asio::socket_base::max_listen_connections);
      acceptor_.native_non_blocking(true); // for spare_descriptor's accept
    } catch (const std::exception& e) {
      throw std::runtime_error(name + ": cannot listen on " + address + ":"
                               + std::to_string(port) + ": " + e.what());
    }
    port_ = acceptor_.local_endpoint().port();
    spdlog::info("{} listening on {}:{}", name, address, port_);
  }

  /// The port bound: the one asked for, or the system's choice for 0.
  uint16_t port() const {
    return port_;
  }

  void start() {
    accept();
  }

  void stop() {
    asio::post(acceptor_.get_executor(), [self = this->shared_from_this()] {
      boost::system::error_code ignored;
      self->retry_.cancel();
      self->acceptor_.close(ignored);
    });
  }

private:
  void accept() {
    acceptor_.async_accept(
      asio::make_strand(ioc_),
      [self = this->shared_from_this()](boost::system::error_code ec,
                                        tcp::socket socket) {
        if (ec == asio::error::operation_aborted || !self->acceptor_.is_open())
          return;
        if (!ec) {
          self->out_of_descriptors_ = false;
          socket.set_option(tcp::no_delay(true), ec);
          self->on_socket_(std::move(socket));
          return self->accept();
        }
        if (self->out_of_descriptors(ec) && self->spare_.turn_away_one(self->acceptor_.native_handle()))
          return self->accept();
        self->accept_later(); // an error that trying at once would only repeat
      });
  }

  bool out_of_descriptors(const boost::system::error_code& ec) {
    if (ec != asio::error::no_descriptors
        && ec != boost::system::errc::too_many_files_open_in_system)
      return false;
    if (!std::exchange(out_of_descriptors_, true))
      spdlog::warn("{}: out of file descriptors: turning connections away", name_);
    return true;
  }

  void accept_later() {
    retry_.expires_after(std::chrono::milliseconds(100));
    retry_.async_wait([self = this->shared_from_this()](boost::system::error_code ec) {
      if (!ec && self->acceptor_.is_open())
        self->accept();
    });
  }

  asio::io_context& ioc_;
  tcp::acceptor acceptor_;
  asio::steady_timer retry_{acceptor_.get_executor()};
  std::string name_;
  OnSocket on_socket_;
  uint16_t port_ = 0;
  spare_descriptor spare_;
  bool out_of_descriptors_ = false;
};

/// Listeners on one io_context: what the HTTP and the wire services are
/// made of, apart from what they do with a socket.
class listener_group {
public:
  /// Binds now and accepts once started; on_socket gets each socket.
  /// Returns the port bound.
  template <class OnSocket>
  uint16_t listen(const std::string& name, const std::string& address,
                  uint16_t port, OnSocket on_socket) {
    auto loop = std::make_shared<accept_loop<OnSocket>>(
      io_.ioc, name, address, port, std::move(on_socket));
    loop->start();
    stoppers_.push_back([loop] { loop->stop(); });
    return loop->port();
  }

  void start(unsigned threads) {
    io_.start(threads);
  }

  asio::io_context& context() {
    return io_.ioc;
  }

  void stop_accepting() {
    for (auto& stop : stoppers_)
      stop();
  }

  void stop() {
    stop_accepting();
    io_.stop();
    stoppers_.clear();
  }

private:
  io_threads io_;
  std::vector<std::function<void()>> stoppers_;
};

} // namespace qf::io
