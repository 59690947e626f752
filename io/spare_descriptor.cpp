#include "io/spare_descriptor.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace qf::io {

namespace {

int open_spare() {
  return ::open("/dev/null", O_RDONLY | O_CLOEXEC);
}

} // namespace

spare_descriptor::spare_descriptor() : fd_(open_spare()) {
  // nop
}

spare_descriptor::~spare_descriptor() {
  if (fd_ >= 0)
    ::close(fd_);
}

bool spare_descriptor::turn_away_one(int listen_fd) {
  if (fd_ < 0 && (fd_ = open_spare()) < 0)
    return false;
  ::close(fd_);
  int conn = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (conn >= 0)
    ::close(conn);
  fd_ = open_spare();
  return conn >= 0;
}

} // namespace qf::io
