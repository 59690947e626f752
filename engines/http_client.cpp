#include "engines/http_client.hpp"

#include "protocols/common/host_port.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <atomic>
#include <cerrno>

#include <sys/socket.h>
#include <charconv>
#include <stdexcept>

namespace qf::engines {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

std::optional<http_url> parse_http_url(std::string_view url) {
  http_url out;
  if (url.substr(0, 7) == "http://") {
    url.remove_prefix(7);
  } else if (url.substr(0, 8) == "https://") {
    url.remove_prefix(8);
    out.tls = true;
    out.port = 443;
  } else {
    return std::nullopt;
  }
  auto slash = url.find('/');
  auto authority = url.substr(0, slash);
  if (slash != std::string_view::npos)
    out.target = std::string{url.substr(slash)};
  auto split = split_host_port(authority, out.port);
  if (!split)
    return std::nullopt;
  out.host = std::move(split->host);
  out.port = split->port;
  return out;
}

struct http_client::impl {
  impl(std::chrono::milliseconds t, const tls_trust& trust)
    : default_timeout(t), timeout(t), tls_context(ssl::context::tls_client) {
    tls_context.set_options(ssl::context::no_sslv2 | ssl::context::no_sslv3
                            | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
    if (trust.insecure_skip_verify) {
      tls_context.set_verify_mode(ssl::verify_none);
      verify = false;
    } else {
      tls_context.set_verify_mode(ssl::verify_peer);
      if (trust.ca_file.empty())
        tls_context.set_default_verify_paths();
      else
        tls_context.load_verify_file(trust.ca_file);
    }
  }

  std::chrono::milliseconds default_timeout;
  std::chrono::milliseconds timeout; // of the request under way
  ssl::context tls_context;
  bool verify = true;
  asio::io_context ioc;
  std::optional<beast::tcp_stream> plain;
  std::optional<beast::ssl_stream<beast::tcp_stream>> secure;
  std::string connected_to; // "scheme://host:port" of the open stream
  beast::flat_buffer buffer;
  std::atomic<bool> interrupted{false};
  /// Which send is running, so that a late interrupt misses the next one.
  std::atomic<uint64_t> seq{0};
  std::atomic<bool> busy{false};

  beast::tcp_stream& tcp_layer() {
    return secure ? beast::get_lowest_layer(*secure) : *plain;
  }

  bool open() const {
    return plain || secure;
  }

  void close() {
    if (open()) {
      beast::error_code ignored;
      tcp_layer().socket().shutdown(tcp::socket::shutdown_both, ignored);
      tcp_layer().close();
    }
    plain.reset();
    secure.reset();
    connected_to.clear();
    buffer.clear();
  }

  /// Runs the io_context until `done` or the timeout (then the operation
  /// is cancelled and its handler runs).
  void wait(const bool& done) {
    ioc.restart();
    ioc.run_for(timeout);
    if (!done) {
      if (open())
        tcp_layer().cancel();
      ioc.restart();
      ioc.run();
    }
  }

  static std::string key_of(const http_url& url) {
    return (url.tls ? "https://" : "http://") + join_host_port(url.host, url.port);
  }

  /// A kept connection whose server has closed it (EOF or an error
  /// waiting to be read): checked without blocking before it is reused.
  bool stale() {
    char byte;
    auto fd = tcp_layer().socket().native_handle();
    auto n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
  }

  void connect(const http_url& url) {
    auto key = key_of(url);
    if (open() && connected_to == key && !stale())
      return;
    close();
    tcp::resolver resolver{ioc};
    beast::error_code ec;
    auto endpoints = resolver.resolve(url.host, std::to_string(url.port), ec);
    if (ec)
      throw std::runtime_error("cannot resolve " + url.host + ": " + ec.message());
    if (url.tls)
      secure.emplace(ioc, tls_context);
    else
      plain.emplace(ioc);
    auto& layer = tcp_layer();
    layer.expires_after(timeout);
    bool done = false;
    layer.async_connect(endpoints, [&](beast::error_code e, const tcp::endpoint&) {
      ec = e;
      done = true;
    });
    wait(done);
    if (ec || !done) {
      close();
      throw std::runtime_error("cannot connect to " + key + ": "
                               + (ec ? ec.message() : std::string{"timed out"}));
    }
    if (url.tls) {
      // SNI, and the certificate must name the host.
      if (!SSL_set_tlsext_host_name(secure->native_handle(), url.host.c_str()))
        throw std::runtime_error("cannot set the TLS server name " + url.host);
      if (verify)
        secure->set_verify_callback(ssl::host_name_verification(url.host));
      done = false;
      layer.expires_after(timeout);
      secure->async_handshake(ssl::stream_base::client, [&](beast::error_code e) {
        ec = e;
        done = true;
      });
      wait(done);
      if (ec || !done) {
        close();
        throw std::runtime_error("TLS with " + key + " failed: "
                                 + (ec ? ec.message() : std::string{"timed out"}));
      }
    }
    connected_to = key;
  }

  template <class Stream>
  void round_trip(Stream& stream, http::request<http::string_body>& req,
                  http::response_parser<http::string_body>& parser, beast::error_code& ec,
                  bool& done) {
    http::async_write(stream, req, [&](beast::error_code e, size_t) {
      if (e) {
        ec = e;
        done = true;
        return;
      }
      http::async_read(stream, buffer, parser, [&](beast::error_code e2, size_t) {
        ec = e2;
        done = true;
      });
    });
  }

  http_response exchange(std::string_view method, const http_url& url,
                         const http_headers& headers, const std::string& body) {
    http::request<http::string_body> req{http::string_to_verb(method), url.target, 11};
    req.set(http::field::host, join_host_port(url.host, url.port));
    req.set(http::field::user_agent, "QueryFlux");
    for (const auto& [name, value] : headers)
      req.set(name, value);
    req.body() = body;
    req.prepare_payload();
    http::response_parser<http::string_body> parser;
    parser.body_limit(256 * 1024 * 1024); // Trino pages are a few MB at most
    beast::error_code ec;
    bool done = false;
    tcp_layer().expires_after(timeout);
    if (secure)
      round_trip(*secure, req, parser, ec, done);
    else
      round_trip(*plain, req, parser, ec, done);
    wait(done);
    if (ec || !done) {
      close();
      throw std::system_error(ec ? ec : beast::error::timeout);
    }
    auto res = parser.release();
    if (!res.keep_alive())
      close();
    return {static_cast<int>(res.result_int()), std::move(res.body())};
  }
};

http_client::http_client(std::chrono::milliseconds timeout, tls_trust trust)
  : impl_(std::make_unique<impl>(timeout, trust)) {
  // nop
}

http_client::~http_client() = default;

http_response http_client::send(std::string_view method, const http_url& url,
                                const http_headers& headers, std::string body,
                                std::optional<std::chrono::milliseconds> timeout) {
  auto& im = *impl_;
  im.timeout = timeout.value_or(im.default_timeout);
  im.interrupted = false;
  ++im.seq;
  im.busy = true;
  struct idle_after {
    std::atomic<bool>& busy;
    ~idle_after() {
      busy = false;
    }
  } idle{im.busy};
  bool idempotent = method == "GET" || method == "DELETE" || method == "HEAD";
  bool reused = im.open() && im.connected_to == impl::key_of(url);
  for (int attempt = 0;; ++attempt) {
    try {
      im.connect(url);
      return im.exchange(method, url, headers, body);
    } catch (const std::exception& e) {
      if (im.interrupted)
        throw std::runtime_error("interrupted");
      // A kept connection may have been closed by the server in between.
      if (!reused || !idempotent || attempt > 0)
        throw std::runtime_error(std::string{method} + " " + impl::key_of(url) + url.target
                                 + ": " + e.what());
    }
  }
}

void http_client::interrupt() {
  auto* im = impl_.get();
  if (!im->busy)
    return;
  im->interrupted = true;
  asio::post(im->ioc, [im, seq = im->seq.load()] {
    if (im->busy && im->seq == seq && im->open())
      im->tcp_layer().cancel();
  });
}

} // namespace qf::engines
