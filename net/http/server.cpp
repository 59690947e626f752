// The only Beast translation unit: accept, read with limits, hand a plain
// request to a handler, write its response back on the connection's strand.
#include "net/http/server.hpp"

#include "io/idle_registry.hpp"

#include "net/io/accept_loop.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <spdlog/spdlog.h>

#include <array>
#include <atomic>
#include <list>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace qf::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;

std::string request::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (beast::iequals(k, name))
      return v;
  return {};
}

response text_response(int status, std::string body) {
  response res;
  res.status = status;
  res.content_type = "text/plain; charset=utf-8";
  res.body = std::move(body);
  return res;
}

response error_response(int status, std::string_view message) {
  response res;
  res.status = status;
  res.body = "{\"error\":\"";
  for (char c : message) {
    if (c == '"' || c == '\\')
      res.body += '\\';
    if (static_cast<unsigned char>(c) >= 0x20)
      res.body += c;
  }
  res.body += "\"}";
  return res;
}

namespace {

constexpr auto idle_timeout = std::chrono::seconds(120);
constexpr size_t header_limit = 64 * 1024;
/// How much of a refused body we read and drop before closing.
constexpr size_t linger_limit = 64 * 1024 * 1024;

using io::evictable;

struct listener_state {
  listener_options opts;
  /// Every open connection, to find the longest idle at the limit.
  io::idle_registry open;

  /// Set when the listener speaks HTTPS only.
  std::unique_ptr<asio::ssl::context> tls;
  std::shared_ptr<handler> target;
  std::atomic<uint32_t> connections{0};
  /// Answers handed to reply() and not written yet: a drain that ends
  /// waits for them (finish_answers), else a query's last page, served
  /// as far as the query is concerned, could be cut off.
  std::atomic<int64_t> unsent{0};
};

using plain_stream = beast::tcp_stream;
using tls_stream = beast::ssl_stream<beast::tcp_stream>;

template <class Stream>
Stream make_stream(tcp::socket&& socket, listener_state& owner) {
  if constexpr (std::is_same_v<Stream, tls_stream>)
    return Stream{std::move(socket), *owner.tls};
  else
    return Stream{std::move(socket)};
}

/// One connection, plain or TLS (Stream): the handshake first for TLS,
/// then the same read, dispatch and write.
template <class Stream>
class session : public evictable, public std::enable_shared_from_this<session<Stream>> {
public:
  session(tcp::socket&& socket, std::shared_ptr<listener_state> owner)
    : stream_(make_stream<Stream>(std::move(socket), *owner)), owner_(std::move(owner)) {
    owner_->connections.fetch_add(1);
  }

  ~session() override {
    if (registered_)
      owner_->open.leave(*registered_);
    owner_->connections.fetch_sub(1);
  }

  /// Joins the listener's open connections (once shared), idle: nothing
  /// asked yet.
  void enlist() {
    registered_ = owner_->open.join(std::static_pointer_cast<evictable>(this->shared_from_this()));
  }

  void evict() override {
    asio::post(stream_.get_executor(), [self = this->shared_from_this()] {
      if (self->waiting_) // a request that came meanwhile goes on
        self->close();
    });
  }

  session(const session&) = delete;
  session& operator=(const session&) = delete;

  void run() {
    asio::dispatch(stream_.get_executor(), [self = this->shared_from_this()] {
      self->waiting_ = true; // no request yet: evictable, also in the handshake
      if constexpr (std::is_same_v<Stream, tls_stream>) {
        self->lowest().expires_after(std::chrono::seconds(10));
        self->stream_.async_handshake(asio::ssl::stream_base::server,
                                      [self](beast::error_code ec) {
                                        if (ec)
                                          return self->close();
                                        self->read();
                                      });
      } else {
        self->read();
      }
    });
  }

  /// Answers 503 and closes: the listener is at maxConnections.
  void refuse() {
    asio::dispatch(stream_.get_executor(), [self = this->shared_from_this()] {
      self->keep_alive_ = false;
      self->write(error_response(503, "too many connections"));
    });
  }

  /// Runs on any thread; hops onto the strand.
  void reply(response res) {
    owner_->unsent.fetch_add(1);
    asio::post(stream_.get_executor(),
               [self = this->shared_from_this(), res = std::move(res)]() mutable {
                 self->write(std::move(res), true);
               });
  }

private:
  /// Waiting for a request (evictable) or not, on the strand.
  void waiting(bool yes) {
    waiting_ = yes;
    if (registered_) // a refused newcomer never joined
      owner_->open.stand(*registered_, yes ? io::idle_registry::standing::idle_anonymous
                                           : io::idle_registry::standing::busy);
  }

  /// Waits for the next request: on a kept-alive connection up to the
  /// idle timeout for its first byte, then its headers within the header
  /// timeout (a new connection's from the start), then its body.
  void read() {
    parser_.emplace();
    parser_->body_limit(owner_->opts.body_limit);
    parser_->header_limit(header_limit);
    waiting(true);
    if (!served_any_ || buffer_.size() > 0)
      return read_header();
    lowest().expires_after(idle_timeout);
    stream_.async_read_some(buffer_.prepare(4096),
                            [self = this->shared_from_this()](beast::error_code ec, size_t n) {
                              if (ec)
                                return self->close();
                              self->buffer_.commit(n);
                              self->read_header();
                            });
  }

  void read_header() {
    lowest().expires_after(owner_->opts.header_timeout);
    bhttp::async_read_header(stream_, buffer_, *parser_,
                             [self = this->shared_from_this()](beast::error_code ec, size_t) {
                               if (ec)
                                 return self->on_read(ec);
                               self->read_body();
                             });
  }

  void read_body() {
    waiting(false); // a request is here: it is not to be evicted
    lowest().expires_after(idle_timeout);
    bhttp::async_read(stream_, buffer_, *parser_,
                      [self = this->shared_from_this()](beast::error_code ec, size_t) {
                        self->on_read(ec);
                      });
  }

  void on_read(beast::error_code ec) {
    waiting(false);
    served_any_ = true;
    if (ec == bhttp::error::end_of_stream || ec == asio::error::eof
        || ec == beast::error::timeout || ec == asio::error::connection_reset
        || ec == asio::error::operation_aborted) {
      close();
      return;
    }
    keep_alive_ = !ec && parser_->get().keep_alive();
    if (ec == bhttp::error::body_limit) {
      keep_alive_ = false;
      write(error_response(413, "request body is too large"));
      return;
    }
    if (ec) {
      keep_alive_ = false;
      write(error_response(400, "malformed HTTP request: " + ec.message()));
      return;
    }
    auto msg = parser_->release();
    request req;
    auto text = [](auto sv) { return std::string(sv.data(), sv.size()); };
    req.method = text(msg.method_string());
    req.target = text(msg.target());
    for (const auto& field : msg)
      req.headers.emplace_back(text(field.name_string()),
                               text(field.value()));
    req.body = std::move(msg.body());
    dispatch(std::move(req));
  }

  void dispatch(request req) {
    // The guard answers 500 if the handler drops every copy of respond.
    struct guard {
      std::shared_ptr<session> owner;
      bool done = false;
      ~guard() {
        if (!done)
          owner->reply(error_response(500, "the request was dropped"));
      }
    };
    auto g = std::make_shared<guard>();
    g->owner = this->shared_from_this();
    respond_fn respond = [g](response res) {
      if (g->done)
        return;
      g->done = true;
      g->owner->reply(std::move(res));
    };
    try {
      owner_->target->handle(std::move(req), std::move(respond));
    } catch (const std::exception& e) {
      spdlog::error("{}: handler threw: {}", owner_->opts.name, e.what());
      if (!g->done) {
        g->done = true;
        reply(error_response(500, "internal error"));
      }
    }
  }

  /// owed: a reply(), counted in unsent until written.
  void write(response res, bool owed = false) {
    if (res.shared_body) {
      auto bytes = std::move(res.shared_body);
      auto msg = std::make_shared<bhttp::response<bhttp::span_body<const char>>>();
      prepare(*msg, res);
      msg->body() = {bytes->data(), bytes->size()};
      // The bytes live as long as the write: `bytes` rides with it.
      return send(std::move(msg), owed, std::move(bytes));
    }
    auto msg = std::make_shared<bhttp::response<bhttp::string_body>>();
    prepare(*msg, res);
    msg->body() = std::move(res.body);
    send(std::move(msg), owed, nullptr);
  }

  template <class Message>
  void prepare(Message& msg, const response& res) {
    msg.result(static_cast<unsigned>(res.status));
    msg.version(11);
    msg.set(bhttp::field::server, "QueryFlux");
    if (res.status != 304 && res.status != 204)
      msg.set(bhttp::field::content_type, res.content_type);
    for (const auto& [k, v] : res.headers)
      msg.set(k, v);
  }

  template <class Message>
  void send(std::shared_ptr<Message> msg, bool owed, std::shared_ptr<const std::string> bytes) {
    msg->keep_alive(keep_alive_);
    msg->prepare_payload();
    lowest().expires_after(idle_timeout);
    bhttp::async_write(stream_, *msg,
                       [self = this->shared_from_this(), msg, owed,
                        bytes = std::move(bytes)](beast::error_code ec, size_t) {
                         if (owed)
                           self->owner_->unsent.fetch_sub(1);
                         if (ec) {
                           self->close();
                           return;
                         }
                         if (!self->keep_alive_) {
                           self->linger();
                           return;
                         }
                         self->read();
                       });
  }

  /// Closes after the client has seen our answer: a client still sending a
  /// body we refused would get a reset instead of the 413 if we closed now.
  void linger() {
    beast::error_code ignored;
    lowest().socket().shutdown(tcp::socket::shutdown_send, ignored);
    lowest().expires_after(std::chrono::seconds(2));
    drain(0);
  }

  void drain(size_t discarded) {
    if (discarded > linger_limit) {
      close();
      return;
    }
    stream_.async_read_some(
      asio::buffer(discard_),
      [self = this->shared_from_this(), discarded](beast::error_code ec, size_t n) {
        if (ec)
          self->close();
        else
          self->drain(discarded + n);
      });
  }

  void close() {
    beast::error_code ignored;
    lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
    lowest().socket().close(ignored);
  }

  beast::tcp_stream& lowest() {
    return beast::get_lowest_layer(stream_);
  }

  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::shared_ptr<listener_state> owner_;
  bool keep_alive_ = true;
  /// Strand-only: waiting for a request (evictable), and past the first.
  bool waiting_ = false;
  bool served_any_ = false;
  std::optional<io::idle_registry::entry> registered_;
  std::array<char, 16384> discard_;
};

} // namespace

struct service::impl : io::listener_group {
  std::vector<std::shared_ptr<listener_state>> states;
};

service::service() : impl_(std::make_unique<impl>()) {
  // nop
}

service::~service() {
  stop();
}

namespace {

std::unique_ptr<asio::ssl::context> load_tls(const listener_options& opts) {
  auto ctx = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
  ctx->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2
                   | asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1
                   | asio::ssl::context::no_tlsv1_1);
  try {
    ctx->use_certificate_chain_file(opts.tls_cert_file);
    ctx->use_private_key_file(opts.tls_key_file, asio::ssl::context::pem);
  } catch (const std::exception& e) {
    throw std::runtime_error(opts.name + ": cannot load the TLS certificate " + opts.tls_cert_file
                             + " or key " + opts.tls_key_file + ": " + e.what());
  }
  return ctx;
}

template <class Stream>
void serve_socket(tcp::socket socket, const std::shared_ptr<listener_state>& state) {
  auto s = std::make_shared<session<Stream>>(std::move(socket), state);
  // At the limit the newcomer takes the place of the connection idle the
  // longest (as nginx reuses keep-alive connections); refused only when
  // every connection has a request in flight.
  if (state->connections.load() > state->opts.max_connections
      && !state->open.evict_longest_idle()) {
    s->refuse();
    return;
  }
  s->enlist();
  s->run();
}

} // namespace

uint16_t service::listen(const listener_options& opts, std::shared_ptr<handler> h) {
  auto state = std::make_shared<listener_state>();
  state->opts = opts;
  state->target = std::move(h);
  if (!opts.tls_cert_file.empty())
    state->tls = load_tls(opts);
  impl_->states.push_back(state);
  return impl_->listen(opts.name, opts.address, opts.port, [state](tcp::socket socket) {
    if (state->tls)
      serve_socket<tls_stream>(std::move(socket), state);
    else
      serve_socket<plain_stream>(std::move(socket), state);
  });
}

void service::start(unsigned threads) {
  impl_->start(threads);
}

void service::stop_accepting() {
  impl_->stop_accepting();
}

void service::finish_answers(std::chrono::milliseconds timeout) {
  auto unsent = [this] {
    int64_t n = 0;
    for (const auto& s : impl_->states)
      n += s->unsent.load();
    return n;
  };
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (unsent() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

void service::stop() {
  impl_->stop();
}

} // namespace qf::http
