// What a wire fast-lane connection knows of its clients' state in the
// server's session, shared by the PostgreSQL and MySQL connections: whether
// one client's own state lives there, and whose settings it has.
#pragma once

#include <memory>
#include <utility>

namespace qf::engines {

/// Settings: sql::session_settings or sql::mysql_variables.
template <class Settings>
class client_state {
public:
  /// A client left state of its own in the server's session (a temporary
  /// table, a lock): the connection is that client's from now on, never
  /// pooled, where the next client would see that state
  /// (wire_session_base::keep_private_backend). `pin`, if given, counts it
  /// against its cluster's maxPinnedSessions for as long as it lives.
  void hold_private_state(std::shared_ptr<void> pin = nullptr) {
    private_state_ = true;
    if (pin)
      pin_ = std::move(pin);
  }
  bool holds_private_state() const {
    return private_state_;
  }

  /// The settings its clients' SETs left on this connection's session
  /// (what a client with others must replay first).
  const Settings& settings() const {
    return settings_;
  }
  /// Its session has these now: a client's tracked SET or RESET, or a
  /// replay of a client's, succeeded here. The setting the server reported
  /// changing with it is accounted for.
  void settings_now(Settings s) {
    settings_ = std::move(s);
    setting_reported_ = false;
  }

  /// Whose statement last left state of the session's own here that its
  /// later statements may read (PostgreSQL's sequences, for lastval()):
  /// an opaque identity, compared only (wire_session_base).
  const void* state_left_by() const {
    return state_left_by_;
  }
  void state_left_by(const void* client) {
    state_left_by_ = client;
  }

protected:
  /// Nobody else's statement may run here (for poolable()).
  bool held_by_a_client() const {
    return private_state_ || setting_reported_;
  }

  bool private_state_ = false; // see hold_private_state()
  /// The server reported a setting changed (PostgreSQL's ParameterStatus)
  /// that no tracked SET accounts for: a function's set_config().
  bool setting_reported_ = false;

private:
  const void* state_left_by_ = nullptr;
  std::shared_ptr<void> pin_;
  Settings settings_;
};

} // namespace qf::engines
