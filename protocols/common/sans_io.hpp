// What every wire-protocol state machine shares: bytes in, events and bytes
// out. A protocol's session derives from this, appends to in_ and calls its
// own process() from feed(), and pushes events and writes output there.
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <string_view>
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

  /// The bytes take_output() would return, for a driver that sends them
  /// at once; clear_output() then keeps the buffer for the next ones.
  std::string_view output() const {
    return out_;
  }

  void clear_output() {
    out_.clear();
    if (out_.capacity() > kept_output_capacity) // after a burst of rows
      out_ = {};
  }

  static constexpr size_t kept_output_capacity = 64 * 1024;

protected:
  std::string in_;
  std::string out_;
  std::deque<Event> events_;
};

} // namespace qf
