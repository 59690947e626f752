// Studio's logins on one node: checks credentials, issues and verifies the
// signed session cookie (protocols/studio/session_token), and remembers
// the sessions logged out here until they would have expired.
#pragma once

#include "protocols/config/model.hpp"
#include "protocols/studio/session_token.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace qf::boundary {

class studio_sessions {
public:
  /// Seconds since the epoch; a test may bring its own clock.
  using clock_fn = std::function<int64_t()>;

  static constexpr std::chrono::hours lifetime{12};
  static constexpr std::string_view cookie_name = "qf_studio";

  /// `key`: the node's session key (random, or shared by the replicas
  /// through PostgreSQL); `secure`: the admin port serves TLS only.
  studio_sessions(config::admin_api credentials, std::string key, bool secure,
                  clock_fn now = nullptr);

  /// A new session for matching credentials (compared in constant time).
  std::optional<studio::session_claims> login(std::string_view username,
                                              std::string_view password) const;

  /// The session a request's Cookie header carries, if valid and not
  /// logged out.
  std::optional<studio::session_claims> check(std::string_view cookie_header) const;

  /// Ends a session on this node.
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
  mutable std::mutex mtx_;
  /// Logged-out session ids and their expiry, dropped once expired.
  std::map<std::string, int64_t> revoked_;
};

/// The value of cookie `name` in a Cookie header, or "".
std::string_view cookie_value(std::string_view header, std::string_view name);

} // namespace qf::boundary
