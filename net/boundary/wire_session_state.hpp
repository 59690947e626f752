// The client's own server-session state, a part of wire_session_base
// (net/boundary/wire_session_base.hpp): the connection a client's state
// keeps for it (its private backend), the pins that cap such connections
// per cluster, and whether a pooled connection is given the client's SETs
// first. Included by wire_session_base.hpp only.
#pragma once

namespace qf {

template <class Derived, class Backend>
void wire_session_base<Derived, Backend>::keep_private_backend(std::shared_ptr<Backend> own) {
  private_backend_ = std::move(own);
  private_cluster_ = fast_->cluster;
  // As of when the client left its state there: a block that a reset
  // (COM_RESET_CONNECTION, COM_CHANGE_USER) rolled back hands over a
  // connection whose state that reset discarded.
  private_resets_ = state_resets_;
}

template <class Derived, class Backend>
std::shared_ptr<cluster_state>
wire_session_base<Derived, Backend>::kept_cluster_in(const group_gate& gate) {
  if (!private_backend_ || !gate.has_member(*private_cluster_))
    return nullptr;
  if (private_resets_ != self().session_.session_resets() || !private_backend_->reusable()
      || !private_cluster_->routable()) {
    private_backend_.reset();
    private_cluster_.reset();
    return nullptr;
  }
  return private_cluster_;
}

template <class Derived, class Backend>
std::shared_ptr<Backend> wire_session_base<Derived, Backend>::take_private_backend() {
  if (!private_backend_)
    return nullptr;
  if (private_resets_ != self().session_.session_resets() || !private_backend_->reusable()) {
    private_backend_.reset();
    private_cluster_.reset();
    return nullptr;
  }
  if (private_cluster_ != fast_->cluster)
    return nullptr;
  private_cluster_.reset();
  return std::exchange(private_backend_, nullptr);
}

template <class Derived, class Backend>
bool wire_session_base<Derived, Backend>::needs_replay(const Backend& conn) {
  if (fast_->in_block || conn.settings() == settings_)
    return false;
  giving_ = settings_;
  if (fast_->tracks)
    giving_.apply(fast_->sql);
  prelude_ = giving_.prelude_from(conn.settings());
  return !prelude_.empty();
}

template <class Derived, class Backend>
bool wire_session_base<Derived, Backend>::pin(fast_statement& st) {
  if ((st.pin = st.cluster->try_pin()))
    return true;
  conn_->loop().post([weak = weak_self()] {
    auto self = weak.lock();
    if (!self || self->closed_ || !self->fast_)
      return;
    self->fast_->pins = false; // it never ran: a block's connection stays the block's
    const auto& cluster = *self->fast_->cluster;
    self->on_failed(Derived::pinned_out_error(
        "cluster \"" + cluster.name + "\" keeps " + std::to_string(cluster.max_pinned)
        + " connections for clients' own session state already (maxPinnedSessions), and this "
          "statement would keep one more for this client (it creates a temporary table, SETs, "
          "takes a session lock or PREPAREs); "
        + std::string{Derived::letting_state_go}));
  });
  return false;
}

} // namespace qf
