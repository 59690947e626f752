#include "protocols/studio/session_token.hpp"

#include "protocols/common/hex.hpp"
#include "protocols/common/hmac.hpp"
#include "protocols/common/secrets.hpp"
#include "protocols/common/sha256.hpp"

#include <algorithm>
#include <charconv>

namespace qf::studio {

namespace {

// <expires_at>.<id>.<hex of the user>.<mac>: digits and hex only, which a
// cookie carries unquoted.
std::string payload_of(const session_claims& c) {
  return std::to_string(c.expires_at) + "." + c.id + "." + to_hex(c.user);
}

std::string mac_of(std::string_view payload, const signing_key& key) {
  std::string signed_text{payload};
  signed_text += '\n';
  signed_text += key.credentials;
  return hmac_sha256_hex(key.key, signed_text);
}

bool is_hex(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return hex_digit_value(c) >= 0; });
}

std::optional<std::string> from_hex(std::string_view s) {
  if (s.size() % 2 != 0 || !is_hex(s))
    return std::nullopt;
  std::string out;
  out.reserve(s.size() / 2);
  for (size_t i = 0; i < s.size(); i += 2)
    out += static_cast<char>(hex_digit_value(s[i]) * 16 + hex_digit_value(s[i + 1]));
  return out;
}

/// The next '.'-separated field of `rest`, which loses it.
std::string_view next_field(std::string_view& rest) {
  auto dot = rest.find('.');
  auto field = rest.substr(0, dot);
  rest = dot == std::string_view::npos ? std::string_view{} : rest.substr(dot + 1);
  return field;
}

} // namespace

std::string fingerprint_of(std::string_view username, std::string_view password) {
  std::string both{username};
  both += '\0';
  both += password;
  return sha256_hex(both);
}

std::string issue(const session_claims& claims, const signing_key& key) {
  auto payload = payload_of(claims);
  return payload + "." + mac_of(payload, key);
}

std::optional<session_claims> verify(std::string_view token, const signing_key& key,
                                     int64_t now) {
  if (token.empty() || token.size() > max_token_length)
    return std::nullopt;
  auto last_dot = token.rfind('.');
  if (last_dot == std::string_view::npos)
    return std::nullopt;
  auto payload = token.substr(0, last_dot);
  if (std::count(payload.begin(), payload.end(), '.') != 2)
    return std::nullopt;
  // The MAC first, in constant time: nothing unsigned is parsed further.
  if (!secrets_equal(token.substr(last_dot + 1), mac_of(payload, key)))
    return std::nullopt;
  auto rest = payload;
  auto expiry = next_field(rest);
  auto id = next_field(rest);
  auto user = from_hex(next_field(rest));
  session_claims c;
  auto [end, ec] = std::from_chars(expiry.data(), expiry.data() + expiry.size(), c.expires_at);
  if (ec != std::errc{} || end != expiry.data() + expiry.size() || c.expires_at <= 0
      || !rest.empty() || !user || id.size() != 32 || !is_hex(id) || c.expires_at <= now)
    return std::nullopt;
  c.id = std::string{id};
  c.user = std::move(*user);
  return c;
}

std::string csrf_token(const session_claims& claims, const signing_key& key) {
  return hmac_sha256_hex(key.key, "csrf." + claims.id).substr(0, 32);
}

} // namespace qf::studio
