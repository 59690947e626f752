// A file descriptor held in reserve for when the process runs out
// (EMFILE). An edge-triggered acceptor that cannot accept leaves the
// connection in the backlog, where it waits for an edge that only a newer
// connection brings; a level-triggered one spins. With the spare let go,
// the connection waiting first is accepted and closed at once: its client
// hears, and the backlog drains.
#pragma once

namespace qf::io {

class spare_descriptor {
public:
  spare_descriptor();
  ~spare_descriptor();

  spare_descriptor(const spare_descriptor&) = delete;
  spare_descriptor& operator=(const spare_descriptor&) = delete;

  /// Accepts one connection waiting on the non-blocking listen_fd and
  /// closes it; false when there was none, or no spare to let go.
  bool turn_away_one(int listen_fd);

private:
  int fd_;
};

} // namespace qf::io
