#include "engines/http_client.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <charconv>
#include <stdexcept>

namespace qf::engines {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

std::optional<http_url> parse_http_url(std::string_view url) {
  constexpr std::string_view scheme = "http://";
  if (url.substr(0, scheme.size()) != scheme)
    return std::nullopt;
  url.remove_prefix(scheme.size());
  http_url out;
  auto slash = url.find('/');
  auto authority = url.substr(0, slash);
  if (slash != std::string_view::npos)
    out.target = std::string{url.substr(slash)};
  auto colon = authority.rfind(':');
  if (colon != std::string_view::npos && authority.find(']') == std::string_view::npos) {
    auto port = authority.substr(colon + 1);
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc{} || end != port.data() + port.size() || value == 0 || value > 65535)
      return std::nullopt;
    out.port = static_cast<uint16_t>(value);
    authority = authority.substr(0, colon);
  }
  if (authority.empty())
    return std::nullopt;
  out.host = std::string{authority};
  return out;
}

struct http_client::impl {
  explicit impl(std::chrono::milliseconds t) : timeout(t) {
    // nop
  }

  std::chrono::milliseconds timeout;
  asio::io_context ioc;
  std::optional<beast::tcp_stream> stream;
  std::string connected_to; // "host:port" of the open stream
  beast::flat_buffer buffer;
  std::atomic<bool> interrupted{false};
  /// Which send is running, so that a late interrupt misses the next one.
  std::atomic<uint64_t> seq{0};
  std::atomic<bool> busy{false};

  void close() {
    if (stream) {
      beast::error_code ignored;
      stream->socket().shutdown(tcp::socket::shutdown_both, ignored);
      stream->close();
    }
    stream.reset();
    connected_to.clear();
    buffer.clear();
  }

  /// Runs the io_context until `done`, the timeout, or an interrupt.
  void wait(const bool& done) {
    ioc.restart();
    ioc.run_for(timeout);
    if (!done) { // timed out: end the operation, let its handler run
      if (stream)
        stream->cancel();
      ioc.restart();
      ioc.run();
    }
  }

  void connect(const http_url& url) {
    auto key = url.host + ":" + std::to_string(url.port);
    if (stream && connected_to == key)
      return;
    close();
    tcp::resolver resolver{ioc};
    beast::error_code ec;
    auto endpoints = resolver.resolve(url.host, std::to_string(url.port), ec);
    if (ec)
      throw std::runtime_error("cannot resolve " + url.host + ": " + ec.message());
    stream.emplace(ioc);
    stream->expires_after(timeout);
    bool done = false;
    stream->async_connect(endpoints, [&](beast::error_code e, const tcp::endpoint&) {
      ec = e;
      done = true;
    });
    wait(done);
    if (ec || !done) {
      close();
      throw std::runtime_error("cannot connect to " + key + ": "
                               + (ec ? ec.message() : std::string{"timed out"}));
    }
    connected_to = key;
  }

  http_response exchange(std::string_view method, const http_url& url,
                         const http_headers& headers, const std::string& body) {
    http::request<http::string_body> req{http::string_to_verb(method), url.target, 11};
    req.set(http::field::host, url.host + ":" + std::to_string(url.port));
    req.set(http::field::user_agent, "QueryFlux");
    for (const auto& [name, value] : headers)
      req.set(name, value);
    req.body() = body;
    req.prepare_payload();
    http::response_parser<http::string_body> parser;
    parser.body_limit(256 * 1024 * 1024); // Trino pages are a few MB at most
    beast::error_code ec;
    bool done = false;
    stream->expires_after(timeout);
    http::async_write(*stream, req, [&](beast::error_code e, size_t) {
      if (e) {
        ec = e;
        done = true;
        return;
      }
      http::async_read(*stream, buffer, parser, [&](beast::error_code e2, size_t) {
        ec = e2;
        done = true;
      });
    });
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

http_client::http_client(std::chrono::milliseconds timeout)
  : impl_(std::make_unique<impl>(timeout)) {
  // nop
}

http_client::~http_client() = default;

http_response http_client::send(std::string_view method, const http_url& url,
                                const http_headers& headers, std::string body) {
  auto& im = *impl_;
  im.interrupted = false;
  ++im.seq;
  im.busy = true;
  struct idle_after {
    std::atomic<bool>& busy;
    ~idle_after() {
      busy = false;
    }
  } idle{im.busy};
  bool reused = im.stream && im.connected_to == url.host + ":" + std::to_string(url.port);
  for (int attempt = 0;; ++attempt) {
    try {
      im.connect(url);
      return im.exchange(method, url, headers, body);
    } catch (const std::exception& e) {
      if (im.interrupted)
        throw std::runtime_error("interrupted");
      // A kept connection may have been closed by the server in between.
      if (!reused || attempt > 0)
        throw std::runtime_error(std::string{method} + " " + url.host + ":"
                                 + std::to_string(url.port) + url.target + ": " + e.what());
    }
  }
}

void http_client::interrupt() {
  auto* im = impl_.get();
  if (!im->busy)
    return;
  im->interrupted = true;
  asio::post(im->ioc, [im, seq = im->seq.load()] {
    if (im->busy && im->seq == seq && im->stream)
      im->stream->cancel();
  });
}

} // namespace qf::engines
