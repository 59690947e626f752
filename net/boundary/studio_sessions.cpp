#include "net/boundary/studio_sessions.hpp"

#include "net/boundary/secure_random.hpp"
#include "protocols/common/secrets.hpp"

namespace qf::boundary {

namespace {

int64_t system_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

} // namespace

std::vector<std::string_view> cookie_values(std::string_view header, std::string_view name) {
  std::vector<std::string_view> out;
  while (!header.empty() && out.size() < 16) {
    auto semi = header.find(';');
    auto pair = trimmed(header.substr(0, semi));
    header = semi == std::string_view::npos ? std::string_view{} : header.substr(semi + 1);
    auto eq = pair.find('=');
    if (eq != std::string_view::npos && trimmed(pair.substr(0, eq)) == name)
      out.push_back(trimmed(pair.substr(eq + 1)));
  }
  return out;
}

std::string_view cookie_value(std::string_view header, std::string_view name) {
  auto all = cookie_values(header, name);
  return all.empty() ? std::string_view{} : all.front();
}

studio_sessions::studio_sessions(config::admin_api credentials, std::string key, bool secure,
                                 clock_fn now, std::shared_ptr<revoked_sessions> revoked,
                                 logout_fn on_logout)
  : credentials_(std::move(credentials)),
    key_{std::move(key), studio::fingerprint_of(credentials_.username, credentials_.password)},
    secure_(secure),
    now_(now ? std::move(now) : clock_fn{system_seconds}),
    revoked_(revoked ? std::move(revoked) : std::make_shared<revoked_sessions>()),
    on_logout_(std::move(on_logout)) {
  // nop
}

std::optional<studio::session_claims> studio_sessions::login(std::string_view username,
                                                             std::string_view password) const {
  // Both compared, whichever fails: the time says nothing of which.
  bool user_ok = secrets_equal(username, credentials_.username);
  bool password_ok = secrets_equal(password, credentials_.password);
  if (!(user_ok && password_ok))
    return std::nullopt;
  return studio::session_claims{credentials_.username, random_hex(16),
                                now_() + std::chrono::seconds(lifetime).count()};
}

std::optional<studio::session_claims> studio_sessions::check(std::string_view cookie_header) const {
  // Every cookie of the name: another page of the same site may set one
  // for a longer path, which the browser sends first.
  for (auto token : cookie_values(cookie_header, cookie_name)) {
    auto claims = studio::verify(token, key_, now_());
    if (claims && !revoked_->contains(claims->id))
      return claims;
  }
  return std::nullopt;
}

void studio_sessions::logout(const studio::session_claims& session) {
  revoked_->merge({{session.id, session.expires_at}}, now_());
  if (on_logout_)
    on_logout_(session.id, session.expires_at);
}

std::string studio_sessions::csrf_token(const studio::session_claims& session) const {
  return studio::csrf_token(session, key_);
}

std::string studio_sessions::set_cookie(const studio::session_claims& session) const {
  return std::string{cookie_name} + "=" + studio::issue(session, key_)
         + "; Path=/; Max-Age=" + std::to_string(std::chrono::seconds(lifetime).count())
         + "; HttpOnly; SameSite=Strict" + (secure_ ? "; Secure" : "");
}

std::string studio_sessions::clear_cookie() const {
  return std::string{cookie_name} + "=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict"
         + (secure_ ? "; Secure" : "");
}

bool studio_sessions::default_credentials() const {
  return credentials_.username == "admin" && credentials_.password == "admin";
}

} // namespace qf::boundary
