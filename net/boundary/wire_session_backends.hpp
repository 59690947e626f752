// The fast lane's backend connections, a part of wire_session_base
// (net/boundary/wire_session_base.hpp): which connection an admitted
// statement starts on, and where it goes when the statement ends.
// Included by wire_session_base.hpp only.
#pragma once

namespace qf {

template <class Derived, class Backend>
void wire_session_base<Derived, Backend>::take_backend() {
  if (auto own = take_private_backend())
    return self().start_backend(std::move(own));
  if (fast_->pins && !pin(*fast_))
    return;
  auto lane = Derived::lane_of(*fast_->cluster);
  if (fast_->follows_previous)
    return take_previous_backend(*lane);
  if (self().joined_a_pipeline(*lane))
    return;
  // One that has this session's settings already needs no replay first.
  auto has_ours = [this](const Backend& c) { return c.settings() == settings_; };
  if (auto idle = lane->take(conn_->loop(), has_ours))
    return self().start_backend(std::move(idle));
  lane->fetch(conn_->loop(), [weak = weak_self(), lane](std::shared_ptr<Backend> conn,
                                                       std::string error) {
    auto self = weak.lock();
    if (!self || self->closed_ || !self->fast_) { // nobody waits for it
      lane->give_back(std::move(conn));
      return;
    }
    if (self->fast_->cancelled) { // before it ever reached the server
      lane->give_back(std::move(conn));
      self->on_failed(Derived::cancelled_error());
      return;
    }
    if (!conn) {
      self->on_failed(Derived::connect_error(error));
      return;
    }
    self->start_backend(std::move(conn));
  });
}

template <class Derived, class Backend>
template <class Lane>
void wire_session_base<Derived, Backend>::take_previous_backend(Lane& lane) {
  auto previous = previous_backend_.lock();
  auto is_it = [&](const Backend& c) { return &c == previous.get() && c.state_left_by() == this; };
  if (auto idle = previous ? lane.take_only(conn_->loop(), is_it) : nullptr)
    return self().start_backend(std::move(idle));
  conn_->loop().post([weak = weak_self()] {
    auto self = weak.lock();
    if (self && !self->closed_ && self->fast_)
      self->on_failed(Derived::previous_connection_gone_error());
  });
}

template <class Derived, class Backend>
void wire_session_base<Derived, Backend>::settle_fast(std::string status, std::string error) {
  auto& lane = *Derived::lane_of(*fast_->cluster);
  if (backend_ && fast_->cancel_sent && status != "Cancelled"
      && !backend_->holds_private_state())
    // It ended before its cancel arrived, which may yet: on this
    // connection's next statement, anyone's. The connection goes.
    backend_->abandon(&self());
  if (backend_ && fast_->pins) {
    backend_->hold_private_state(std::move(fast_->pin));
    state_resets_ = self().session_.session_resets();
  }
  // For a statement after it that reads what it left there, unless
  // another client's leaves its own there first.
  if (backend_ && fast_->leaves_state_behind) {
    backend_->state_left_by(this);
    previous_backend_ = backend_;
  }
  if (backend_ && fast_->tracks && status == "Success") {
    auto server = backend_->settings(); // what the replay gave it, if one ran
    server.apply_on_server(fast_->sql);
    settings_.apply(fast_->sql);
    backend_->settings_now(std::move(server));
  }
  block_lost_ = settle_connection(
                  *fast_, backend_, block_, lane,
                  [weak = weak_self()](const void* which) {
                    if (auto self = weak.lock())
                      self->block_hung_up(which);
                  },
                  [this](std::shared_ptr<Backend> own) { keep_private_backend(std::move(own)); })
                && !closed_;
  auto done = std::move(*fast_);
  fast_.reset();
  books_->ended(std::move(done), conn_->loop(), std::move(status), std::move(error));
}

} // namespace qf
