// Trino's client protocol -> query actors. Answers bad requests itself, so
// query actors only ever see well-formed ones.
#include "net/boundary/routes.hpp"
#include "net/boundary/trino_gateway_routes.hpp"

#include "actors/data/statement.hpp"
#include "net/boundary/secure_random.hpp"
#include "net/http/url.hpp"
#include "protocols/common/json_writer.hpp"
#include "protocols/common/secrets.hpp"
#include "protocols/sql/statements.hpp"

#include <caf/all.hpp>

#include <charconv>

namespace qf::boundary {

namespace {


http::response trino_error(int status, const trino::error_code& code,
                           const std::string& message) {
  trino::results_page page;
  page.id = "";
  page.stats.state = trino::query_state::failed;
  page.error = trino::query_error{message, code};
  http::response res;
  res.status = status;
  res.body = trino::encode(page);
  return res;
}

http::response unavailable(const std::string& message) {
  auto res = trino_error(503, trino::errors::server_starting_up, message);
  res.headers.emplace_back("Retry-After", "1");
  return res;
}

/// A host[:port] a client may have used: letters, digits, '.', '-', ':' and
/// brackets only, so that no header can put anything else into a URI.
bool plausible_host(std::string_view host) {
  if (host.empty() || host.size() > 255)
    return false;
  for (char c : host)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != ':'
        && c != '[' && c != ']' && c != '_')
      return false;
  return true;
}

/// Where the client reached us, as Trino rebuilds it: X-Forwarded-Proto and
/// X-Forwarded-Host behind a proxy (their first values), else Host.
std::string address_used(const http::request& req, uint16_t port) {
  auto first = [](std::string v) {
    v = v.substr(0, v.find(','));
    while (!v.empty() && v.front() == ' ')
      v.erase(0, 1);
    while (!v.empty() && v.back() == ' ')
      v.pop_back();
    return v;
  };
  auto proto = first(req.header("x-forwarded-proto"));
  if (proto != "https")
    proto = "http";
  auto host = first(req.header("x-forwarded-host"));
  if (!plausible_host(host))
    host = first(req.header("host"));
  if (!plausible_host(host))
    host = "localhost:" + std::to_string(port);
  return proto + "://" + host;
}

class trino_routes : public http::handler {
public:
  explicit trino_routes(std::shared_ptr<node_services> node)
    : node_(std::move(node)) {
    // nop
  }

  void handle(http::request req, http::respond_fn respond) override {
    auto seg = http::path_segments(req.target);
    auto& m = req.method;
    if (seg.size() == 2 && seg[0] == "v1" && seg[1] == "statement") {
      if (m == "POST")
        return submit(std::move(req), std::move(respond));
      return respond(http::error_response(405, "use POST"));
    }
    // nextUri: /v1/statement/{queued|executing}/{id}/{slug}/{token}
    if (seg.size() == 6 && seg[0] == "v1" && seg[1] == "statement"
        && (seg[2] == "executing" || seg[2] == "queued")) {
      auto query = node_->queries->find(seg[3], seg[4]);
      if (!query) // unknown, finished, or not the query's own slug
        return respond(http::error_response(404, "unknown query " + seg[3]));
      if (m == "GET")
        return poll(*query, seg[5], std::move(respond));
      if (m == "DELETE")
        return cancel(*query, std::move(respond));
      return respond(http::error_response(405, "use GET or DELETE"));
    }
    if (seg.size() == 3 && seg[0] == "v1" && seg[1] == "query") {
      if (m != "GET" && m != "DELETE")
        return respond(http::error_response(405, "use GET or DELETE"));
      auto caller = trino::parse_client_session(req.headers);
      if (!authenticated(caller))
        return respond(http::error_response(401, "credentials required"));
      if (!visible_to(caller, seg[2])) // as if there were none: ids are sequential
        return respond(http::error_response(404, "unknown query " + seg[2]));
      if (m == "GET")
        return info(seg[2], std::move(respond));
      auto query = node_->queries->find(seg[2]);
      if (!query)
        return respond(http::error_response(404, "unknown query " + seg[2]));
      return cancel(*query, std::move(respond));
    }
    if (seg.size() == 2 && seg[0] == "v1" && seg[1] == "info" && m == "GET")
      return respond(server_info());
    if (seg.size() == 2 && seg[0] == "v1" && seg[1] == "query" && m == "GET") {
      auto caller = trino::parse_client_session(req.headers);
      if (!authenticated(caller))
        return respond(http::error_response(401, "credentials required"));
      return respond(query_list(caller));
    }
    if (serve_probes(node_, req, respond))
      return;
    respond(http::error_response(404, "no such resource: " + req.target));
  }

private:

  void submit(http::request req, http::respond_fn respond) {
    if (node_->draining.load())
      return respond(unavailable("the server is shutting down"));
    if (!node_->snapshot->load())
      return respond(unavailable("the gateway has no configuration yet"));
    if (req.body.find_first_not_of(" \t\r\n;") == std::string::npos)
      return respond(trino_error(400, trino::errors::syntax_error,
                                 "SQL statement is empty"));
    statement_spec spec;
    spec.session = trino::parse_client_session(req.headers);
    if (!authenticated(spec.session)) {
      node_->stats->auth_failed("trinoHttp");
      auto res = http::error_response(401, "invalid or missing credentials");
      res.headers.emplace_back("WWW-Authenticate", "Basic realm=\"queryflux\"");
      return respond(std::move(res));
    }
    if (impersonating(spec.session))
      return respond(trino_error(403, trino::errors::permission_denied,
                                 "X-Trino-User \"" + spec.session.user
                                   + "\" is not the authenticated user"));
    if (spec.session.user.empty())
      return respond(trino_error(400, trino::errors::generic_user_error,
                                 "User must be set (X-Trino-User)"));
    spec.ticket = node_->next_ticket.fetch_add(1);
    spec.id = node_->query_id(spec.ticket);
    spec.slug = random_hex(16); // 128 bits: the nextUri's secret
    // A running query lives in this process: its nextUri must come back
    // here, by the address the client used, unless one is configured.
    spec.base_address = node_->external_address.empty()
                          ? address_used(req, node_->trino.port)
                          : node_->external_address;
    spec.sql = std::move(req.body);
    auto id = spec.id;
    spec.live = std::make_shared<query_liveness>();
    spec.summary = std::make_shared<query_summary>(id, spec.session.user, "trinoHttp",
                                                   std::string{sql::preview(spec.sql, 160)});
    auto live = spec.live;
    auto summary = spec.summary;
    auto slug = spec.slug;
    auto base = spec.base_address;
    auto query = spawn_statement(node_, std::move(spec));
    node_->queries->add(id, query, std::move(live), std::move(summary), slug);
    http::response res;
    res.body = trino_submitted_page(base, id, slug);
    respond(std::move(res));
  }

  /// With static users configured, Basic credentials must name one of them.
  bool authenticated(const trino::client_session& s) const {
    auto active = node_->snapshot->load();
    if (!active || !active->config->auth.enabled)
      return true;
    const auto& users = active->config->auth.users;
    auto i = users.find(s.basic_user);
    auto expected = i == users.end() ? std::string{} : i->second;
    return secrets_equal(s.password, expected) && i != users.end()
           && s.has_password;
  }

  /// With authentication on, a query's info and cancel are its user's
  /// alone; without it, everyone is trusted with everything.
  bool visible_to(const trino::client_session& caller, const std::string& id) const {
    auto active = node_->snapshot->load();
    if (!active || !active->config->auth.enabled)
      return true;
    if (auto user = node_->queries->user_of(id))
      return *user == caller.basic_user;
    if (auto record = node_->history->record(id))
      return record->user == caller.basic_user;
    return true; // unknown: 404 either way
  }

  /// With authentication on, X-Trino-User may not name someone else.
  bool impersonating(const trino::client_session& s) const {
    auto active = node_->snapshot->load();
    return active && active->config->auth.enabled && s.user != s.basic_user;
  }

  void poll(const caf::actor& query, const std::string& token_text, http::respond_fn respond) {
    uint64_t token = 0;
    auto [end, ec] = std::from_chars(
      token_text.data(), token_text.data() + token_text.size(), token);
    if (ec != std::errc{} || end != token_text.data() + token_text.size())
      return respond(http::error_response(400, "bad page token"));
    caf::anon_send(query, atom::poll::value, token, adapt(std::move(respond)));
  }

  void cancel(const caf::actor& query, http::respond_fn respond) {
    caf::anon_send(query, atom::cancel::value, false);
    http::response res;
    res.status = 204;
    respond(std::move(res));
  }

  void info(const std::string& id, http::respond_fn respond) {
    if (auto query = node_->queries->find(id))
      return caf::anon_send(*query, atom::info::value,
                            adapt(std::move(respond)));
    // Finished and gone: answer from history.
    if (auto record = node_->history->get(id)) {
      http::response res;
      res.body = std::move(*record);
      return respond(std::move(res));
    }
    respond(http::error_response(404, "unknown query " + id));
  }

  http::response server_info() const {
    http::response res;
    res.body = "{\"nodeVersion\":{\"version\":\"queryflux-" QF_VERSION "\"},"
               "\"environment\":\"queryflux\",\"coordinator\":true,"
               "\"starting\":";
    res.body += node_->ready() ? "false" : "true";
    res.body += ",\"uptime\":\"0s\"}";
    return res;
  }

  /// GET /v1/query: Trino's BasicQueryInfo of the queued and running
  /// statements of every frontend, which a gateway in front of this one
  /// weighs for leastLoaded.
  /// With authentication on, other users' statements are listed (a gateway
  /// in front counts them) without their SQL.
  http::response query_list(const trino::client_session& caller) const {
    auto active = node_->snapshot->load();
    bool everyones = !active || !active->config->auth.enabled;
    http::response res;
    res.body = "[";
    for (const auto& s : node_->unfinished_statements()) {
      if (res.body.size() > 1)
        res.body += ',';
      res.body += "{\"queryId\":";
      json_text::append_string(res.body, s.id);
      res.body += ",\"state\":";
      json_text::append_string(res.body, s.state);
      res.body += ",\"query\":";
      json_text::append_string(res.body, everyones || s.user == caller.basic_user ? s.sql_preview
                                                                                 : std::string{});
      res.body += ",\"session\":{\"user\":";
      json_text::append_string(res.body, s.user);
      res.body += "}}";
    }
    res.body += ']';
    return res;
  }

  std::shared_ptr<node_services> node_;
};

} // namespace

trino_respond adapt(http::respond_fn respond) {
  return [respond = std::move(respond)](trino_reply reply) {
    http::response res;
    res.status = reply.http_status;
    res.body = std::move(reply.body);
    respond(std::move(res));
  };
}

std::shared_ptr<http::handler>
make_trino_routes(std::shared_ptr<node_services> node) {
  return std::make_shared<trino_routes>(std::move(node));
}

} // namespace qf::boundary
