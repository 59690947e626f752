// The wire service's reading, against a real TCP client on loopback.
#include "net/wire/tcp_server.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

namespace {

constexpr uint16_t test_port = 24190;

/// Records what a connection reads, asking for more after each chunk; the
/// first chunk holds the wire thread for a while.
struct recorder : qf::wire::handler {
  std::shared_ptr<qf::wire::connection> conn;
  std::mutex mtx;
  std::string got;
  bool first = true;
  std::promise<void> holding;
  std::promise<void> closed;

  void on_data(std::string_view bytes) override {
    bool hold = false;
    {
      std::lock_guard guard{mtx};
      got.append(bytes);
      hold = std::exchange(first, false);
    }
    if (hold) {
      holding.set_value();
      std::this_thread::sleep_for(300ms); // the client's rest arrives meanwhile
    }
    conn->read_more();
  }
  void on_closed() override {
    closed.set_value();
  }
  void on_tls_ready() override {
    // nop
  }
};

qf::wire::listener_options on_loopback(uint16_t port) {
  qf::wire::listener_options opts;
  opts.name = "test";
  opts.address = "127.0.0.1";
  opts.port = port;
  return opts;
}

int connect_to(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  return fd;
}

} // namespace

TEST(wire_service, the_last_bytes_and_the_hang_up_announced_at_once_are_both_read) {
  // Bytes and the end of the stream that arrive together come in one
  // epoll event; the read that takes the bytes comes back short with the
  // end still unread. Taken for "nothing more", the end was never read:
  // the connection stayed open for good, holding a slot of maxConnections.
  auto rec = std::make_shared<recorder>();
  qf::wire::service service;
  auto opts = on_loopback(test_port);
  service.listen(opts, [rec](std::shared_ptr<qf::wire::connection> conn) {
    rec->conn = std::move(conn);
    return rec;
  });
  service.start();

  int fd = connect_to(test_port);
  ASSERT_EQ(::send(fd, "first", 5, 0), 5);
  ASSERT_EQ(rec->holding.get_future().wait_for(5s), std::future_status::ready);
  ASSERT_EQ(::send(fd, "last", 4, 0), 4);
  ::shutdown(fd, SHUT_WR);
  auto closed = rec->closed.get_future();
  EXPECT_EQ(closed.wait_for(5s), std::future_status::ready) << "the hang-up went unread";
  {
    std::lock_guard guard{rec->mtx};
    EXPECT_EQ(rec->got, "firstlast");
  }
  ::close(fd);
  service.stop();
  rec->conn.reset();
}

TEST(wire_service, connections_are_dealt_to_the_loops_in_turn_and_started_on_their_own) {
  // Each loop serves every third connection; its session is made on that
  // loop's thread, since a session arms timers and opens backends there.
  struct quiet : qf::wire::handler {
    void on_data(std::string_view) override {}
    void on_closed() override {}
    void on_tls_ready() override {}
  };
  std::mutex mtx;
  std::map<const qf::io::event_loop*, int> per_loop;
  int made_elsewhere = 0;
  std::vector<std::shared_ptr<qf::wire::connection>> conns;
  std::promise<void> all_made;
  constexpr int connections = 6;
  qf::wire::service service{3};
  auto opts = on_loopback(test_port + 1);
  service.listen(opts, [&](std::shared_ptr<qf::wire::connection> conn) {
    std::lock_guard guard{mtx};
    ++per_loop[&conn->loop()];
    made_elsewhere += conn->loop().in_loop_thread() ? 0 : 1;
    conns.push_back(conn);
    if (conns.size() == connections)
      all_made.set_value();
    return std::make_shared<quiet>();
  });
  service.start();
  std::vector<int> fds;
  for (int i = 0; i < connections; ++i)
    fds.push_back(connect_to(test_port + 1));
  ASSERT_EQ(all_made.get_future().wait_for(5s), std::future_status::ready);
  {
    std::lock_guard guard{mtx};
    EXPECT_EQ(made_elsewhere, 0);
    ASSERT_EQ(per_loop.size(), 3u);
    for (const auto& [loop, n] : per_loop)
      EXPECT_EQ(n, 2);
  }
  for (int fd : fds)
    ::close(fd);
  service.stop();
  conns.clear();
}

TEST(wire_service, a_session_that_cannot_start_costs_its_connection_only) {
  // A factory that throws (the random number generator failing, say)
  // closes that connection; the listener and the next connection go on.
  struct quiet : qf::wire::handler {
    void on_data(std::string_view) override {}
    void on_closed() override {}
    void on_tls_ready() override {}
  };
  std::atomic<int> made{0};
  std::promise<void> second;
  qf::wire::service service{2};
  auto opts = on_loopback(test_port + 2);
  service.listen(opts, [&](std::shared_ptr<qf::wire::connection>) -> std::shared_ptr<qf::wire::handler> {
    if (made.fetch_add(1) == 0)
      throw std::runtime_error("no session for you");
    second.set_value();
    return std::make_shared<quiet>();
  });
  service.start();
  int refused = connect_to(test_port + 2);
  timeval wait{5, 0}; // a failure, not a hang, if it stays open
  ::setsockopt(refused, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  char byte;
  EXPECT_EQ(::recv(refused, &byte, 1, 0), 0) << "the refused connection stayed open";
  int served = connect_to(test_port + 2);
  EXPECT_EQ(second.get_future().wait_for(5s), std::future_status::ready);
  ::close(refused);
  ::close(served);
  service.stop();
}

TEST(wire_service, a_session_that_throws_loses_its_connection_and_the_loop_serves_on) {
  struct throwing : qf::wire::handler {
    std::shared_ptr<qf::wire::connection> conn;
    void on_data(std::string_view bytes) override {
      if (bytes.find("boom") != std::string_view::npos)
        throw std::runtime_error("a bug in one session");
      conn->write(std::string{bytes}); // echo
      conn->read_more();
    }
    void on_closed() override {}
    void on_tls_ready() override {}
  };
  std::vector<std::shared_ptr<throwing>> sessions;
  std::mutex mtx;
  qf::wire::service service{1};
  auto opts = on_loopback(test_port + 3);
  service.listen(opts, [&](std::shared_ptr<qf::wire::connection> conn) {
    auto h = std::make_shared<throwing>();
    h->conn = std::move(conn);
    std::lock_guard guard{mtx};
    sessions.push_back(h);
    return h;
  });
  service.start();
  timeval wait{5, 0};
  int bad = connect_to(test_port + 3);
  int good = connect_to(test_port + 3);
  for (int fd : {bad, good})
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  ASSERT_EQ(::send(bad, "boom", 4, 0), 4);
  char buf[16];
  EXPECT_EQ(::recv(bad, buf, sizeof buf, 0), 0) << "the failed session's connection stayed open";
  ASSERT_EQ(::send(good, "ping", 4, 0), 4);
  EXPECT_EQ(::recv(good, buf, sizeof buf, 0), 4) << "the other connection was not served";
  ::close(bad);
  ::close(good);
  service.stop();
  std::lock_guard guard{mtx};
  for (auto& s : sessions)
    s->conn.reset();
}

TEST(wire_service, a_session_that_closes_its_connection_lives_to_the_end_of_its_call) {
  // close() from inside on_data ends the connection at once, which lets go
  // of the session: it must not be destroyed while it still runs.
  static std::atomic<bool> destroyed{false};
  static std::atomic<bool> destroyed_mid_call{false};
  struct closing : qf::wire::handler {
    std::shared_ptr<qf::wire::connection> conn;
    ~closing() override {
      destroyed = true;
    }
    void on_data(std::string_view) override {
      conn->close();
      destroyed_mid_call = destroyed.load();
      conn.reset();
    }
    void on_closed() override {}
    void on_tls_ready() override {}
  };
  qf::wire::service service{1};
  service.listen(on_loopback(test_port + 4), [](std::shared_ptr<qf::wire::connection> conn) {
    auto h = std::make_shared<closing>();
    h->conn = std::move(conn);
    return h;
  });
  service.start();
  int fd = connect_to(test_port + 4);
  timeval wait{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  ASSERT_EQ(::send(fd, "bye", 3, 0), 3);
  char byte;
  EXPECT_EQ(::recv(fd, &byte, 1, 0), 0) << "not closed";
  for (int i = 0; i < 100 && !destroyed; ++i)
    std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(destroyed);
  EXPECT_FALSE(destroyed_mid_call) << "the session was destroyed inside its own on_data";
  ::close(fd);
  service.stop();
}

namespace {

/// The served end of a client's connection to `port`: this process's
/// socket on that port whose peer is the client's own address.
int served_end_of(int client_fd, uint16_t port) {
  sockaddr_in client{};
  socklen_t len = sizeof client;
  ::getsockname(client_fd, reinterpret_cast<sockaddr*>(&client), &len);
  for (int fd = 0; fd < 1024; ++fd) {
    sockaddr_in peer{}, local{};
    socklen_t plen = sizeof peer, llen = sizeof local;
    if (fd != client_fd && ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &plen) == 0
        && ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &llen) == 0
        && local.sin_port == htons(port) && peer.sin_port == client.sin_port
        && peer.sin_addr.s_addr == client.sin_addr.s_addr)
      return fd;
  }
  return -1;
}

} // namespace

TEST(wire_service, served_connections_send_small_answers_without_delay) {
  // Nagle's algorithm would hold a session's second short answer until the
  // client acknowledges the first: up to 40 ms per statement on loopback.
  // The listener's TCP_NODELAY is what every accepted socket gets.
  struct echo : qf::wire::handler {
    std::shared_ptr<qf::wire::connection> conn;
    std::promise<void> started;
    void on_data(std::string_view) override {
      started.set_value();
    }
    void on_closed() override {}
    void on_tls_ready() override {}
  };
  auto h = std::make_shared<echo>();
  qf::wire::service service{1};
  service.listen(on_loopback(test_port + 5), [h](std::shared_ptr<qf::wire::connection> conn) {
    h->conn = std::move(conn);
    return h;
  });
  service.start();
  int fd = connect_to(test_port + 5);
  ASSERT_EQ(::send(fd, "hi", 2, 0), 2);
  ASSERT_EQ(h->started.get_future().wait_for(5s), std::future_status::ready);
  int served = served_end_of(fd, test_port + 5);
  ASSERT_GE(served, 0) << "no socket of this process has the client as its peer";
  int nodelay = 0;
  socklen_t len = sizeof nodelay;
  ASSERT_EQ(::getsockopt(served, IPPROTO_TCP, TCP_NODELAY, &nodelay, &len), 0);
  EXPECT_NE(nodelay, 0);
  ::close(fd);
  service.stop();
  h->conn.reset();
}
