#include "net/boundary/capacity_routes.hpp"

#include "net/boundary/ask.hpp"
#include "net/boundary/worker_routes.hpp"

#include <caf/all.hpp>

namespace qf::boundary {

namespace {

using namespace std::chrono_literals;
using worker_api::lease_verb;

http::response refusal(const caf::error& err) {
  auto code = code_of(err);
  if (!code)
    return retry_later(504, caf::to_string(err));
  switch (*code) {
    case errc::unknown_session:
      return coded(409, "unknownSession", message_of(err));
    case errc::lease_not_held:
      return coded(409, "notHeld", message_of(err));
    case errc::stale_lease_call:
      return coded(409, "staleCall", message_of(err));
    case errc::bad_lease:
      return coded(400, "unknownName", message_of(err));
    case errc::not_configured:
      return retry_later(503, message_of(err));
    default:
      return retry_later(503, message_of(err));
  }
}

std::optional<lease_verb> verb_named(const std::string& s) {
  for (auto v : {lease_verb::acquire, lease_verb::release, lease_verb::renew})
    if (s == to_string(v))
      return v;
  return std::nullopt;
}

} // namespace

void serve_capacity(const std::shared_ptr<node_services>& node, const http::request& req,
                    const std::vector<std::string>& seg, http::respond_fn respond) {
  auto verb = seg.size() == 3 ? verb_named(seg[2]) : std::nullopt;
  if (!verb)
    return respond(http::error_response(404, "no such worker API resource: " + req.target
                                               + " (acquire, release, renew)"));
  if (req.method != "POST")
    return respond(http::error_response(405, "use POST"));
  if (!node->lease_table)
    return respond(http::error_response(404, "this node leases no capacity"));
  if (req.body.size() > worker_api::max_lease_call_bytes)
    return respond(http::error_response(413, "the body is larger than 256 KiB"));
  auto decoded = worker_api::decode_lease_call(*verb, req.body);
  if (!decoded.call)
    return respond(http::error_response(400, decoded.error));
  auto& sys = *node->sys;
  const auto& table = node->lease_table;
  auto timeout = 5s + std::chrono::milliseconds(decoded.call->wait_ms);
  auto on_error = [respond](caf::error& err) { respond(refusal(err)); };
  auto ok = [respond](std::string body) {
    http::response res;
    res.body = std::move(body);
    respond(std::move(res));
  };
  switch (*verb) {
    case lease_verb::acquire:
      return ask(
        sys, table, timeout, [ok](worker_api::acquire_answer& a) { ok(worker_api::encode(a)); },
        on_error, atom::acquire::value, std::move(*decoded.call));
    case lease_verb::release:
      return ask(
        sys, table, timeout,
        [ok](worker_api::acquire_answer& a) { ok(worker_api::encode(lease_verb::release, a)); },
        on_error, atom::release::value, std::move(*decoded.call));
    case lease_verb::renew:
      return ask(
        sys, table, timeout,
        [ok](worker_api::acquire_answer& a) { ok(worker_api::encode(lease_verb::renew, a)); },
        on_error, atom::renew::value, std::move(*decoded.call));
  }
}

void serve_sweep_lock(const std::shared_ptr<node_services>& node, const http::request& req,
                      const std::vector<std::string>& seg, http::respond_fn respond) {
  using worker_api::sweep_verb;
  auto verb = seg.size() == 3 ? worker_api::sweep_verb_named(seg[2]) : std::nullopt;
  if (!verb)
    return respond(http::error_response(404, "no such worker API resource: " + req.target
                                               + " (acquire, release, publish, counts)"));
  auto method = *verb == sweep_verb::counts ? "GET" : "POST";
  if (req.method != method)
    return respond(http::error_response(405, std::string{"use "} + method));
  if (!node->lease_table)
    return respond(http::error_response(404, "this node keeps no sweep locks"));
  worker_api::sweep_call call;
  if (*verb == sweep_verb::counts) {
    auto q = req.target.find('?');
    auto name = worker_api::counts_lock_name(
      q == std::string::npos ? std::string_view{} : std::string_view{req.target}.substr(q + 1));
    if (!name)
      return respond(http::error_response(400, "name: expected a lock's name"));
    call.name = std::move(*name);
  } else {
    if (req.body.size() > worker_api::max_sweep_call_bytes)
      return respond(http::error_response(413, "the body is larger than 256 KiB"));
    auto decoded = worker_api::decode_sweep_call(*verb, req.body);
    if (!decoded.call)
      return respond(http::error_response(400, decoded.error));
    call = std::move(*decoded.call);
  }
  ask(
    *node->sys, node->lease_table, 5s,
    [respond, v = *verb](worker_api::sweep_answer& a) {
      http::response res;
      res.body = worker_api::encode(v, a);
      respond(std::move(res));
    },
    [respond](caf::error& err) { respond(refusal(err)); }, atom::sweep_lock::value, *verb,
    std::move(call));
}

} // namespace qf::boundary
