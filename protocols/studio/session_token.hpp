// Studio's session cookie: signed, not stored. The value carries who
// logged in, when the session ends and a random session id, with an
// HMAC-SHA256 under the node's session key and its admin credentials, so
// that any replica sharing the key accepts it and a changed password ends
// it. Pure: the caller brings the key, the credentials and the time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace qf::studio {

/// What a valid cookie says.
struct session_claims {
  std::string user;
  /// Random, 128 bits as hex: what a logout revokes, and what the CSRF
  /// token is derived from.
  std::string id;
  /// Seconds since the epoch.
  int64_t expires_at = 0;
};

/// Longer values are refused unread (a cookie is at most a few hundred
/// bytes; a user name at most 128).
constexpr size_t max_token_length = 512;

/// What signs: the node's key and a fingerprint of its admin credentials.
struct signing_key {
  std::string key;
  std::string credentials; // as fingerprint_of gives it
};

/// A one-way digest of the admin credentials: tokens name no password.
std::string fingerprint_of(std::string_view username, std::string_view password);

/// The cookie's value for `claims`.
std::string issue(const session_claims& claims, const signing_key& key);

/// The claims of `token` if it is well formed, signed with `key` and not
/// expired at `now` (seconds since the epoch); nullopt otherwise.
std::optional<session_claims> verify(std::string_view token, const signing_key& key,
                                     int64_t now);

/// The session's CSRF token, which writes must send back in a header.
std::string csrf_token(const session_claims& claims, const signing_key& key);

} // namespace qf::studio
