// A TCP port on loopback that takes connections (the kernel completes the
// handshake into its backlog) and never says a word: a server that hangs.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>

namespace qf::test_support {

class silent_listener {
public:
  silent_listener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0
        || ::listen(fd_, 16) != 0
        || ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      return;
    port_ = ntohs(addr.sin_port);
  }
  ~silent_listener() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  silent_listener(const silent_listener&) = delete;
  silent_listener& operator=(const silent_listener&) = delete;

  /// 0 if the socket could not be set up.
  uint16_t port() const {
    return port_;
  }

private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

} // namespace qf::test_support
