// Studio on the admin port: its page and assets (compiled into the binary),
// and its login, session and logout. What Studio reads and changes is the
// admin API, which the session cookie opens (admin_routes).
#include "net/boundary/studio_routes.hpp"

#include "net/http/url.hpp"
#include "protocols/common/json_writer.hpp"
#include "protocols/common/secrets.hpp"
#include "protocols/common/temporal.hpp"
#include "studio/embedded.hpp"

#include <nlohmann/json.hpp>

namespace qf::boundary {

namespace {

/// Only the node's own scripts, styles and API; nobody frames it.
void add_page_headers(http::response& res) {
  res.headers.emplace_back("Content-Security-Policy",
                           "default-src 'self'; img-src 'self' data:; object-src 'none'; "
                           "base-uri 'none'; form-action 'self'; frame-ancestors 'none'");
  res.headers.emplace_back("X-Content-Type-Options", "nosniff");
  res.headers.emplace_back("X-Frame-Options", "DENY");
  res.headers.emplace_back("Referrer-Policy", "no-referrer");
}

http::response redirect(std::string location) {
  http::response res;
  res.status = 302;
  res.content_type = "text/plain; charset=utf-8";
  res.headers.emplace_back("Location", std::move(location));
  return res;
}

bool accepts_gzip(const http::request& req) {
  return req.header("accept-encoding").find("gzip") != std::string::npos;
}

http::response asset_response(const http::request& req, const studio::asset& a) {
  http::response res;
  res.content_type = std::string{a.content_type};
  add_page_headers(res);
  res.headers.emplace_back("ETag", std::string{a.etag});
  res.headers.emplace_back("Vary", "Accept-Encoding");
  // The page names the assets of this build: always asked again (a 304
  // when unchanged); the assets, named by their content, never.
  res.headers.emplace_back("Cache-Control", a.immutable ? "public, max-age=31536000, immutable"
                                                        : "no-cache");
  if (req.header("if-none-match") == a.etag) {
    res.status = 304;
    return res;
  }
  if (accepts_gzip(req)) {
    res.headers.emplace_back("Content-Encoding", "gzip");
    res.body = std::string{a.gzipped};
  } else {
    res.body = std::string{a.body};
  }
  return res;
}

const studio::asset* find_asset(std::string_view path) {
  for (const auto& a : studio::assets())
    if (a.path == path)
      return &a;
  return nullptr;
}

http::response json_response(int status, std::string body) {
  http::response res;
  res.status = status;
  res.body = std::move(body);
  res.headers.emplace_back("Cache-Control", "no-store");
  return res;
}

std::string session_json(const studio_sessions& sessions, const studio::session_claims& s,
                         std::string_view role) {
  std::string out = "{\"user\":";
  json_text::append_string(out, s.user);
  out += ",\"csrfToken\":";
  json_text::append_string(out, sessions.csrf_token(s));
  out += ",\"defaultCredentials\":";
  out += sessions.default_credentials() ? "true" : "false";
  out += ",\"role\":";
  json_text::append_string(out, role);
  out += ",\"version\":";
  json_text::append_string(out, QF_VERSION);
  out += ",\"expiresAt\":";
  json_text::append_string(out, utc_text(s.expires_at * 1000, utc_style::iso));
  return out + "}";
}

/// {"username": ..., "password": ...}, each a string of at most 1 KiB.
bool read_login(std::string_view body, std::string& user, std::string& password) {
  if (body.size() > 4096)
    return false;
  auto doc = nlohmann::json::parse(body, nullptr, false);
  if (!doc.is_object())
    return false;
  auto u = doc.find("username");
  auto p = doc.find("password");
  if (u == doc.end() || p == doc.end() || !u->is_string() || !p->is_string())
    return false;
  user = u->get<std::string>();
  password = p->get<std::string>();
  return user.size() <= 1024 && password.size() <= 1024;
}

void serve_api(studio_sessions& sessions, std::string_view role, const http::request& req,
               const std::string& what, const http::respond_fn& respond) {
  auto session = sessions.check(req.header("cookie"));
  if (what == "login") {
    if (req.method != "POST")
      return respond(http::error_response(405, "log in with POST"));
    // JSON only: another site's page cannot send it without asking first
    // (CORS), so it cannot log a browser in behind its user's back.
    if (req.header("content-type").rfind("application/json", 0) != 0)
      return respond(http::error_response(415, "log in with a JSON body "
                                               "(Content-Type: application/json)"));
    std::string user, password;
    if (!read_login(req.body, user, password))
      return respond(http::error_response(
        400, "the body must be a JSON object with a username and a password"));
    auto fresh = sessions.login(user, password);
    if (!fresh)
      return respond(http::error_response(401, "wrong user name or password"));
    auto res = json_response(200, session_json(sessions, *fresh, role));
    res.headers.emplace_back("Set-Cookie", sessions.set_cookie(*fresh));
    return respond(std::move(res));
  }
  if (what == "session") {
    if (req.method != "GET")
      return respond(http::error_response(405, "use GET"));
    if (!session)
      return respond(http::error_response(401, "not logged in"));
    return respond(json_response(200, session_json(sessions, *session, role)));
  }
  if (what == "logout") {
    if (req.method != "POST")
      return respond(http::error_response(405, "log out with POST"));
    if (session) {
      if (!csrf_ok(sessions, *session, req))
        return respond(http::error_response(403, "missing or wrong CSRF token"));
      sessions.logout(*session);
    }
    auto res = json_response(204, "");
    res.headers.emplace_back("Set-Cookie", sessions.clear_cookie());
    return respond(std::move(res));
  }
  respond(http::error_response(404, "no such resource: " + req.target));
}

} // namespace

bool csrf_ok(const studio_sessions& sessions, const studio::session_claims& session,
             const http::request& req) {
  if (req.method == "GET" || req.method == "HEAD")
    return true;
  auto sent = req.header("x-queryflux-csrf");
  return !sent.empty() && secrets_equal(sent, sessions.csrf_token(session));
}

bool serve_studio(studio_sessions& sessions, std::string_view role, const http::request& req,
                  const http::respond_fn& respond) {
  auto seg = http::path_segments(req.target);
  bool read = req.method == "GET" || req.method == "HEAD";
  if (seg.empty() && read) {
    respond(redirect("/studio/"));
    return true;
  }
  if (seg.empty() || seg[0] != "studio")
    return false;
  if (seg.size() >= 2 && seg[1] == "api") {
    serve_api(sessions, role, req, seg.size() == 3 ? seg[2] : "", respond);
    return true;
  }
  if (!read) {
    respond(http::error_response(405, "use GET"));
    return true;
  }
  auto path = req.target.substr(0, req.target.find('?'));
  if (path == "/studio") {
    respond(redirect("/studio/"));
    return true;
  }
  if (seg.size() >= 2 && seg[1] == "assets") {
    if (auto a = find_asset(path))
      respond(asset_response(req, *a));
    else
      respond(http::error_response(404, "no such asset: " + path));
    return true;
  }
  // The page itself: Studio routes within it after '#'.
  respond(asset_response(req, studio::assets().front()));
  return true;
}

bool studio_request(const http::request& req) {
  return !req.header("x-requested-with").empty()
         || !cookie_value(req.header("cookie"), studio_sessions::cookie_name).empty();
}

} // namespace qf::boundary
