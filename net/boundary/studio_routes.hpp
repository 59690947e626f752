// Studio's page, assets, login, session and logout on the admin port.
#pragma once

#include "net/boundary/studio_sessions.hpp"
#include "net/http/types.hpp"

#include <string_view>

namespace qf::boundary {

/// Answers `/` (a redirect to Studio) and everything under `/studio`;
/// false for any other path. `role` is the node's, shown to Studio.
bool serve_studio(studio_sessions& sessions, std::string_view role, const http::request& req,
                  const http::respond_fn& respond);

/// Whether a request that `session` opens may go on: reads always; a
/// change only with the session's CSRF token in X-QueryFlux-CSRF.
bool csrf_ok(const studio_sessions& sessions, const studio::session_claims& session,
             const http::request& req);

/// A request from a page (Studio's cookie, or X-Requested-With): a 401
/// must not carry WWW-Authenticate, or the browser asks for a password in
/// a dialog of its own.
bool studio_request(const http::request& req);

} // namespace qf::boundary
