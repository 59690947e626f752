// Trino HTTP latency and throughput, side by side in one run:
//   gateway: `SELECT 1` through a running QueryFlux (POST + nextUri GETs);
//   floor:   the same client code against a static in-process HTTP server
//            that answers the same two QueryResults documents;
//   engine:  `SELECT 1` straight on an embedded DuckDB connection;
//   gateway over SQLite: the same, routed to SQLite, whose `SELECT 1` costs
//            microseconds: what is left is the gateway's own overhead.
// Prints queries/s, p50 and p99 for 1 and 32 clients, and the ratios.
//
// Usage: trino_http_bench HOST PORT [SECONDS_PER_RUN]
#include "engines/engine.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

/// A blocking HTTP/1.1 keep-alive client: just enough for this benchmark.
class http_client {
public:
  http_client(const std::string& host, uint16_t port,
              std::string extra_headers = {})
    : extra_headers_(std::move(extra_headers)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    ::inet_pton(AF_INET, host.c_str(), &addr.sin_addr);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0)
      throw std::runtime_error("cannot connect to " + host + ":"
                               + std::to_string(port));
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }

  ~http_client() {
    ::close(fd_);
  }

  http_client(const http_client&) = delete;
  http_client& operator=(const http_client&) = delete;

  std::string request(const std::string& method, const std::string& path,
                      const std::string& body) {
    std::string req = method + " " + path + " HTTP/1.1\r\nHost: bench\r\n"
                      "X-Trino-User: bench\r\n" + extra_headers_
                      + "Content-Length: "
                      + std::to_string(body.size()) + "\r\n\r\n" + body;
    send_all(req);
    return read_response();
  }

private:
  void send_all(const std::string& data) {
    size_t sent = 0;
    while (sent < data.size()) {
      auto n = ::send(fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
      if (n <= 0)
        throw std::runtime_error("send failed");
      sent += static_cast<size_t>(n);
    }
  }

  std::string read_response() {
    size_t header_end;
    while ((header_end = buf_.find("\r\n\r\n")) == std::string::npos)
      fill();
    auto headers = buf_.substr(0, header_end);
    size_t length = 0;
    for (auto* key : {"Content-Length: ", "content-length: "})
      if (auto p = headers.find(key); p != std::string::npos)
        length = std::stoul(headers.substr(p + std::strlen(key)));
    auto total = header_end + 4 + length;
    while (buf_.size() < total)
      fill();
    auto body = buf_.substr(header_end + 4, length);
    buf_.erase(0, total);
    return body;
  }

  void fill() {
    char chunk[16384];
    auto n = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (n <= 0)
      throw std::runtime_error("connection closed");
    buf_.append(chunk, static_cast<size_t>(n));
  }

  std::string extra_headers_;
  int fd_ = -1;
  std::string buf_;
};

/// The path of the nextUri in a QueryResults document, or "".
std::string next_path(const std::string& body) {
  auto key = body.find("\"nextUri\":\"");
  if (key == std::string::npos)
    return {};
  auto start = key + 11;
  auto end = body.find('"', start);
  auto uri = body.substr(start, end - start);
  auto scheme = uri.find("://");
  auto slash = uri.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  return slash == std::string::npos ? uri : uri.substr(slash);
}

/// One Trino query the way trino-client runs it: POST, then GET each nextUri.
void statement_actor(http_client& c) {
  auto body = c.request("POST", "/v1/statement", "SELECT 1");
  for (auto next = next_path(body); !next.empty(); next = next_path(body))
    body = c.request("GET", next, "");
  if (body.find("\"FINISHED\"") == std::string::npos)
    throw std::runtime_error("query did not finish: " + body.substr(0, 300));
}

/// A static server answering like a coordinator: queued page, then result.
class floor_server {
public:
  floor_server() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    ::listen(fd_, 128);
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }

  ~floor_server() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    acceptor_.join();
    for (auto& t : workers_)
      t.join();
  }

  floor_server(const floor_server&) = delete;
  floor_server& operator=(const floor_server&) = delete;

  uint16_t port() const {
    return port_;
  }

private:
  void accept_loop() {
    for (;;) {
      int conn = ::accept(fd_, nullptr, nullptr);
      if (conn < 0)
        return;
      int one = 1;
      ::setsockopt(conn, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      workers_.emplace_back([conn] { serve(conn); });
    }
  }

  static void serve(int conn) {
    static const std::string queued
      = R"({"id":"q","infoUri":"http://127.0.0.1/v1/query/q","nextUri":"http://127.0.0.1/v1/statement/executing/q/1","stats":{"state":"QUEUED"}})";
    static const std::string done
      = R"({"id":"q","infoUri":"http://127.0.0.1/v1/query/q","columns":[{"name":"_col0","type":"integer","typeSignature":{"rawType":"integer","arguments":[]}}],"data":[[1]],"stats":{"state":"FINISHED"}})";
    std::string buf;
    char chunk[16384];
    for (;;) {
      size_t end;
      while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
        auto n = ::recv(conn, chunk, sizeof(chunk), 0);
        if (n <= 0) {
          ::close(conn);
          return;
        }
        buf.append(chunk, static_cast<size_t>(n));
      }
      size_t length = 0;
      if (auto p = buf.find("Content-Length: "); p != std::string::npos && p < end)
        length = std::stoul(buf.substr(p + 16));
      while (buf.size() < end + 4 + length) {
        auto n = ::recv(conn, chunk, sizeof(chunk), 0);
        if (n <= 0) {
          ::close(conn);
          return;
        }
        buf.append(chunk, static_cast<size_t>(n));
      }
      const auto& body = buf.rfind("POST", 0) == 0 ? queued : done;
      buf.erase(0, end + 4 + length);
      auto res = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                 "Content-Length: "
                 + std::to_string(body.size()) + "\r\n\r\n" + body;
      ::send(conn, res.data(), res.size(), MSG_NOSIGNAL);
    }
  }

  int fd_ = -1;
  uint16_t port_ = 0;
  std::thread acceptor_;
  std::vector<std::thread> workers_;
};

struct run_result {
  double qps = 0;
  double p50_ms = 0;
  double p99_ms = 0;
};

run_result summarize(std::vector<double>& lat, double seconds) {
  run_result r;
  if (lat.empty())
    return r;
  std::sort(lat.begin(), lat.end());
  r.qps = static_cast<double>(lat.size()) / seconds;
  r.p50_ms = lat[lat.size() / 2];
  r.p99_ms = lat[std::min(lat.size() - 1, lat.size() * 99 / 100)];
  return r;
}

/// Runs `clients` threads each calling op in a loop for `seconds`.
template <class MakeOp>
run_result measure(unsigned clients, double seconds, MakeOp make_op) {
  std::mutex mtx;
  std::vector<double> all;
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  auto start = clock_type::now();
  for (unsigned i = 0; i < clients; ++i)
    threads.emplace_back([&] {
      auto op = make_op();
      std::vector<double> mine;
      while (!stop.load()) {
        auto t0 = clock_type::now();
        op();
        mine.push_back(
          std::chrono::duration<double, std::milli>(clock_type::now() - t0)
            .count());
      }
      std::lock_guard guard{mtx};
      all.insert(all.end(), mine.begin(), mine.end());
    });
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : threads)
    t.join();
  auto elapsed = std::chrono::duration<double>(clock_type::now() - start);
  return summarize(all, elapsed.count());
}

void print(const char* what, unsigned clients, const run_result& r) {
  std::printf("  %-28s %2u clients  %9.0f q/s   p50 %7.3f ms   p99 %7.3f ms\n",
              what, clients, r.qps, r.p50_ms, r.p99_ms);
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s HOST PORT [SECONDS_PER_RUN]\n", argv[0]);
    return 2;
  }
  std::string host = argv[1];
  auto port = static_cast<uint16_t>(std::stoi(argv[2]));
  double seconds = argc > 3 ? std::stod(argv[3]) : 5.0;

  floor_server floor;
  qf::config::cluster duck;
  duck.name = "bench";
  auto db = qf::engines::open_database(duck);

  std::printf("Trino HTTP `SELECT 1`, %.1f s per run, interleaved\n", seconds);
  for (unsigned clients : {1u, 32u}) {
    // Warm-up: connections, pools, caches.
    measure(clients, 0.5, [&] {
      auto c = std::make_shared<http_client>(host, port);
      return [c] { statement_actor(*c); };
    });
    auto engine = measure(std::min(clients, 2u), seconds, [&] {
      std::shared_ptr<qf::engines::connection> conn = db->connect();
      return [conn] {
        auto cur = conn->execute("SELECT 1");
        qf::row_batch rows;
        while (cur->fetch(rows, 1024)) {
          // drain
        }
      };
    });
    auto fl = measure(clients, seconds, [&] {
      auto c = std::make_shared<http_client>("127.0.0.1", floor.port());
      return [c] { statement_actor(*c); };
    });
    auto gw = measure(clients, seconds, [&] {
      auto c = std::make_shared<http_client>(host, port);
      return [c] { statement_actor(*c); };
    });
    auto lite = measure(clients, seconds, [&] {
      auto c = std::make_shared<http_client>(host, port,
                                             "X-QueryFlux-Group: lite\r\n");
      return [c] { statement_actor(*c); };
    });
    print("DuckDB direct (C API)", std::min(clients, 2u), engine);
    print("HTTP floor (static reply)", clients, fl);
    print("QueryFlux -> DuckDB", clients, gw);
    print("QueryFlux -> SQLite", clients, lite);
    std::printf("  DuckDB:  gateway/floor %.2fx q/s, p50 +%.3f ms, p99 +%.3f ms"
                " (p50 beyond floor and engine: %.3f ms)\n",
                gw.qps / fl.qps, gw.p50_ms - fl.p50_ms, gw.p99_ms - fl.p99_ms,
                gw.p50_ms - fl.p50_ms - engine.p50_ms);
    std::printf("  SQLite:  gateway/floor %.2fx q/s, p50 +%.3f ms, p99 +%.3f ms"
                " (the gateway's own added latency)\n\n",
                lite.qps / fl.qps, lite.p50_ms - fl.p50_ms,
                lite.p99_ms - fl.p99_ms);
  }
  return 0;
}
