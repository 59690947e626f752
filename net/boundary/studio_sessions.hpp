// Studio's logins on one node: checks credentials, issues and verifies the
// signed session cookie (protocols/studio/session_token), and remembers
// the sessions logged out here until they would have expired.
#pragma once

#include "actors/control/revoked_sessions.hpp"
#include "protocols/config/model.hpp"
#include "protocols/studio/session_token.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace qf::boundary {

class studio_sessions {
public:
  /// Seconds since the epoch; a test may bring its own clock.
  using clock_fn = std::function<int64_t()>;

  static constexpr std::chrono::hours lifetime{12};
  static constexpr std::string_view cookie_name = "qf_studio";

  /// Where a logout goes besides this node (the other replicas): its
  /// session id and expiry.
  using logout_fn = std::function<void(const std::string& id, int64_t expires_at)>;

  /// `key`: the node's session key (random, or shared by the replicas
  /// through PostgreSQL); `secure`: the admin port serves TLS only;
  /// `revoked`: the sessions logged out, this node's and (with
  /// PostgreSQL) the other replicas'.
  studio_sessions(config::admin_api credentials, std::string key, bool secure,
                  clock_fn now = nullptr,
                  std::shared_ptr<revoked_sessions> revoked = nullptr,
                  logout_fn on_logout = nullptr);

  /// A new session for matching credentials (compared in constant time).
  std::optional<studio::session_claims> login(std::string_view username,
                                              std::string_view password) const;

  /// The session a request's Cookie header carries, if valid and not
  /// logged out.
  std::optional<studio::session_claims> check(std::string_view cookie_header) const;

  /// Ends a session, here at once and on the other replicas with
  /// PostgreSQL (on_logout).
  void logout(const studio::session_claims& session);

  std::string csrf_token(const studio::session_claims& session) const;

  /// The Set-Cookie value for a session, and the one that clears it.
  std::string set_cookie(const studio::session_claims& session) const;
  std::string clear_cookie() const;

  /// Still admin/admin, as the documentation gives them.
  bool default_credentials() const;

private:
  config::admin_api credentials_;
  studio::signing_key key_;
  bool secure_;
  clock_fn now_;
  std::shared_ptr<revoked_sessions> revoked_;
  logout_fn on_logout_;
};

/// The values of cookie `name` in a Cookie header, in order (at most 16).
std::vector<std::string_view> cookie_values(std::string_view header, std::string_view name);

/// The first of them, or "".
std::string_view cookie_value(std::string_view header, std::string_view name);

} // namespace qf::boundary
