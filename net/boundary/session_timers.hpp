// The timers a wire session arms for itself: the deadline to log in, the
// grace after a hang-up, and the one for a silent client in a transaction. Cancelled when the connection closes, on its
// loop: under connection churn, timers left to expire would pile up by the
// hundred thousand (one a second per connection, 60 s each).
#pragma once

#include "io/event_loop.hpp"

#include <chrono>
#include <optional>

namespace qf {

/// How long a wire session whose client hung up mid-statement lets the
/// statement run on before taking the client for gone.
constexpr std::chrono::milliseconds hang_up_grace{1000};

/// A wire frontend's deadlines for its sessions (config::frontend's).
struct wire_session_limits {
  /// To log in.
  std::chrono::milliseconds startup_timeout{60'000};
  /// To say something while holding a transaction block open; 0: none.
  std::chrono::milliseconds idle_transaction_timeout{0};
};

class session_timers {
public:
  explicit session_timers(io::event_loop& loop) : loop_(&loop) {
    // nop
  }

  // On the loop's thread, each of these.

  /// fn closes the connection unless it logged in by then (a stalled
  /// startup or TLS handshake included).
  void arm_login(std::chrono::milliseconds timeout, io::event_loop::task fn) {
    login_ = loop_->after(timeout, std::move(fn));
  }
  /// The client hung up while a statement ran. fn closes the connection
  /// if the statement still runs after hang_up_grace: a client that half-closed
  /// after its last statement gets its answer if it ends by then;
  /// otherwise the client is taken for gone, as PostgreSQL's
  /// client_connection_check_interval takes it, and closing cancels the
  /// statement and frees its slot at once rather than when it would have
  /// ended.
  void arm_hang_up(io::event_loop::task fn) {
    hang_up_ = loop_->after(hang_up_grace, std::move(fn));
  }
  /// The client holds a transaction block open and is silent: fn ends
  /// the session unless the client speaks first (idle_block_ended()).
  void arm_idle_block(std::chrono::milliseconds timeout, io::event_loop::task fn) {
    idle_block_ = loop_->after(timeout, std::move(fn));
  }
  bool idle_block_armed() const {
    return idle_block_.has_value();
  }
  void idle_block_ended() {
    cancel(idle_block_);
  }
  void logged_in() {
    cancel(login_);
  }
  void cancel_all() {
    cancel(login_);
    cancel(hang_up_);
    cancel(idle_block_);
  }

private:
  void cancel(std::optional<io::event_loop::timer>& t) {
    if (t)
      loop_->cancel(*t);
    t.reset();
  }

  io::event_loop* loop_;
  std::optional<io::event_loop::timer> login_;
  std::optional<io::event_loop::timer> hang_up_;
  std::optional<io::event_loop::timer> idle_block_;
};

} // namespace qf
