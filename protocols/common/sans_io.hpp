// What every wire-protocol state machine shares: bytes in, events and bytes
// out. A protocol's session derives from this, appends to in_ and calls its
// own process() from feed(), and pushes events and writes output there.
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <utility>

namespace qf {

template <class Event>
class sans_io_session {
public:
  /// The next thing the driver must do, if any.
  std::optional<Event> next_event() {
    if (events_.empty())
      return std::nullopt;
    auto ev = std::move(events_.front());
    events_.pop_front();
    return ev;
  }

  /// How many bytes take_output() would return.
  size_t output_size() const {
    return out_.size();
  }

  /// Bytes to send to the client.
  std::string take_output() {
    return std::exchange(out_, {});
  }

protected:
  std::string in_;
  std::string out_;
  std::deque<Event> events_;
};

} // namespace qf
