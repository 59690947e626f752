// The wire service's reading, against a real TCP client on loopback.
#include "net/wire/tcp_server.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <mutex>
#include <thread>

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
  qf::wire::listener_options opts;
  opts.name = "test";
  opts.address = "127.0.0.1";
  opts.port = test_port;
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
