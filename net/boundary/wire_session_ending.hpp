// How a wire session's statement ends from outside, a part of
// wire_session_base (net/boundary/wire_session_base.hpp): a cancel from
// any thread (CancelRequest, KILL, the admin API), and the client going
// away, which lets go of its waits, blocks and connections. Included by
// wire_session_base.hpp only.
#pragma once

namespace qf {

template <class Derived, class Backend>
void wire_session_base<Derived, Backend>::cancel(const std::weak_ptr<Derived>& weak,
                                                 const std::string& id, bool close,
                                                 std::function<void()> closed) {
  auto self = weak.lock();
  if (!self) {
    if (closed)
      closed();
    return;
  }
  self->conn_->loop().post([weak, id, close, closed = std::move(closed)] {
    auto session = weak.lock();
    struct on_exit {
      const std::function<void()>& f;
      ~on_exit() {
        if (f)
          f();
      }
    } answer{closed};
    if (!session || session->closed_
        || (!id.empty() && !(session->fast_ && session->fast_->id == id)
            && !(session->lane_ && session->waiting_->id == id)))
      return;
    if (session->lane_) {
      session->leave_lane("Cancelled", trino::errors::user_canceled, "Query was canceled");
    } else if (session->statement_) {
      session->statement_->cancel(false);
    } else if (session->backend_) {
      session->backend_->cancel(session.get());
      if (session->fast_)
        session->fast_->cancel_sent = true;
    } else if (session->fast_) { // its connection is still opening
      session->fast_->cancelled = true;
    }
    if (close)
      session->conn_->close();
  });
}

template <class Derived, class Backend>
void wire_session_base<Derived, Backend>::let_backends_go() {
  if (lane_) {
    // A slot already on its way is freed where it lands (closed_).
    lane_->gate->leave_lane(lane_->ticket);
    stop_lane_timer();
    lane_.reset();
    const auto& q = *waiting_;
    books_->never_admitted(q.id, q.sql, q.route, q.since, q.since_wall_ms, "Cancelled",
                           "the client disconnected");
    node_->in_flight.fetch_sub(1);
  }
  waiting_.reset();
  private_backend_.reset();
  private_cluster_.reset();
  if (pinned_)
    abandon_transaction(*node_, *pinned_);
  pinned_.reset();
  if (fast_) {
    if (backend_)
      std::exchange(backend_, nullptr)->abandon(&self());
    self().finish_fast("Cancelled", "the client disconnected");
  }
  drop_block(block_, *books_);
}

} // namespace qf
