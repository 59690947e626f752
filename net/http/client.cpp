#include "net/http/client.hpp"

#include "engines/http_client.hpp"
#include "net/io/accept_loop.hpp"
#include "protocols/common/host_port.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <mutex>
#include <optional>
#include <thread>

namespace qf::http {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

/// A snapshot is the largest answer a worker asks for.
constexpr uint64_t body_limit = 64 * 1024 * 1024;

/// One request and its answer on a connection of its own.
class exchange : public std::enable_shared_from_this<exchange> {
public:
  exchange(asio::io_context& ioc, ssl::context& tls, http_call call, engines::http_url url,
           std::function<void(http_outcome)> done)
    : call_(std::move(call)), url_(std::move(url)), done_(std::move(done)),
      resolver_(asio::make_strand(ioc)), plain_(resolver_.get_executor()) {
    if (url_.tls)
      secure_.emplace(resolver_.get_executor(), tls);
  }

  void start() {
    lowest().expires_after(call_.timeout);
    deadline_ = std::chrono::steady_clock::now() + call_.timeout;
    auto port = std::to_string(url_.port);
    if (!call_.connect_address.empty()) {
      boost::system::error_code ec;
      auto address = asio::ip::make_address(call_.connect_address, ec);
      if (ec)
        return fail("bad address " + call_.connect_address, ec);
      std::vector<tcp::endpoint> one{{address, url_.port}};
      return connect(one);
    }
    resolver_.async_resolve(url_.host, port,
                            [self = shared_from_this()](beast::error_code ec,
                                                        tcp::resolver::results_type found) {
                              if (ec)
                                return self->fail("cannot resolve " + self->url_.host, ec);
                              self->connect(found);
                            });
  }

private:
  template <class Endpoints>
  void connect(const Endpoints& endpoints) {
    lowest().async_connect(endpoints, [self = shared_from_this()](beast::error_code ec,
                                                                  const auto&) {
      if (ec)
        return self->fail("cannot connect to " + self->authority(), ec);
      if (!self->secure_)
        return self->write(self->plain_);
      self->handshake();
    });
  }

  void handshake() {
    auto& s = *secure_;
    // SNI, and the certificate must name the host the URL names (not the
    // address connected to: a peer found by address is still checked
    // against the service's name).
    boost::system::error_code not_ip;
    asio::ip::make_address(url_.host, not_ip);
    // SNI names hosts, never addresses (RFC 6066).
    if (not_ip && !SSL_set_tlsext_host_name(s.native_handle(), url_.host.c_str()))
      return fail("TLS: cannot set the server name", {});
    s.set_verify_mode(ssl::verify_peer);
    s.set_verify_callback(ssl::host_name_verification(url_.host));
    s.async_handshake(ssl::stream_base::client, [self = shared_from_this()](beast::error_code ec) {
      if (ec)
        return self->fail("TLS handshake with " + self->authority(), ec);
      self->write(*self->secure_);
    });
  }

  template <class Stream>
  void write(Stream& stream) {
    request_.method_string(call_.method);
    request_.target(url_.target);
    request_.version(11);
    request_.set(bhttp::field::host, authority());
    request_.set(bhttp::field::user_agent, "QueryFlux-worker/" QF_VERSION);
    request_.set(bhttp::field::connection, "close");
    for (const auto& [k, v] : call_.headers)
      request_.set(k, v);
    request_.body() = std::move(call_.body);
    request_.prepare_payload();
    bhttp::async_write(stream, request_, [self = shared_from_this(), &stream](beast::error_code ec,
                                                                            size_t) {
      if (ec)
        return self->fail("cannot send to " + self->authority(), ec);
      self->read(stream);
    });
  }

  template <class Stream>
  void read(Stream& stream) {
    parser_.body_limit(body_limit);
    bhttp::async_read(stream, buffer_, parser_, [self = shared_from_this()](beast::error_code ec,
                                                                           size_t) {
      if (ec)
        return self->fail("no answer from " + self->authority(), ec);
      auto& msg = self->parser_.get();
      http_outcome out;
      out.status = static_cast<int>(msg.result_int());
      for (const auto& field : msg)
        out.headers.emplace_back(std::string{field.name_string()}, std::string{field.value()});
      out.body = std::move(msg.body());
      self->finish(std::move(out));
    });
  }

  void fail(const std::string& what, beast::error_code ec) {
    http_outcome out;
    out.error = what;
    if (ec == beast::error::timeout || std::chrono::steady_clock::now() >= deadline_)
      out.error += ": timed out";
    else if (ec)
      out.error += ": " + ec.message();
    finish(std::move(out));
  }

  void finish(http_outcome out) {
    beast::error_code ignored;
    lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
    lowest().close();
    if (auto done = std::exchange(done_, nullptr))
      done(std::move(out));
  }

  std::string authority() const {
    return join_host_port(url_.host, url_.port);
  }

  beast::tcp_stream& lowest() {
    return secure_ ? beast::get_lowest_layer(*secure_) : plain_;
  }

  http_call call_;
  engines::http_url url_;
  std::function<void(http_outcome)> done_;
  std::chrono::steady_clock::time_point deadline_;
  tcp::resolver resolver_;
  beast::tcp_stream plain_;
  std::optional<beast::ssl_stream<beast::tcp_stream>> secure_;
  beast::flat_buffer buffer_;
  bhttp::request<bhttp::string_body> request_;
  bhttp::response_parser<bhttp::string_body> parser_;
};

} // namespace

struct client::impl {
  // Declared first, destroyed last: exchanges still queued in `io` when it
  // goes hold streams made from it.
  ssl::context tls{ssl::context::tls_client};
  io::io_threads io;
  std::mutex stop_mtx;
  bool stopped = false;
  std::thread::id io_thread;
};

client::client(std::string ca_file) : impl_(std::make_shared<impl>()) {
  auto& tls = impl_->tls;
  tls.set_options(ssl::context::no_sslv2 | ssl::context::no_sslv3 | ssl::context::no_tlsv1
                  | ssl::context::no_tlsv1_1);
  tls.set_verify_mode(ssl::verify_peer);
  if (ca_file.empty())
    tls.set_default_verify_paths();
  else
    tls.load_verify_file(ca_file); // throws: a worker that cannot check its control plane stops
  impl_->io.start(1);
}

client::~client() {
  stop();
}

void client::stop() {
  std::lock_guard guard{impl_->stop_mtx};
  if (std::exchange(impl_->stopped, true))
    return;
  impl_->io.stop();
}

void client::send(http_call call, std::function<void(http_outcome)> done) {
  auto url = engines::parse_http_url(call.url);
  if (!url) {
    http_outcome out;
    out.error = "not an http(s) URL: " + call.url;
    return done(std::move(out));
  }
  auto e = std::make_shared<exchange>(impl_->io.ioc, impl_->tls, std::move(call), std::move(*url),
                                      std::move(done));
  asio::post(impl_->io.ioc, [e] { e->start(); });
}

void client::resolve(std::string host, std::function<void(std::vector<std::string>)> done) {
  auto resolver = std::make_shared<tcp::resolver>(impl_->io.ioc);
  resolver->async_resolve(host, "0", [resolver, done = std::move(done)](
                                       beast::error_code ec, tcp::resolver::results_type found) {
    std::vector<std::string> out;
    if (!ec)
      for (const auto& entry : found) {
        auto text = entry.endpoint().address().to_string();
        if (std::find(out.begin(), out.end(), text) == out.end())
          out.push_back(std::move(text));
      }
    done(std::move(out));
  });
}

} // namespace qf::http
