#include "net/boundary/dashboard_routes.hpp"

#include "net/boundary/ask.hpp"
#include "net/http/url.hpp"
#include "protocols/common/json_writer.hpp"
#include "protocols/common/temporal.hpp"

#include <caf/all.hpp>

#include <charconv>

namespace qf::boundary {

namespace {

using namespace std::chrono_literals;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

http::response buckets_response(const query_buckets& b) {
  http::response res;
  res.body = "{\"bucketSeconds\":" + std::to_string(b.bucket_ms / 1000) + ",\"buckets\":[";
  for (size_t i = 0; i < b.queries.size(); ++i) {
    if (i > 0)
      res.body += ',';
    res.body += "{\"start\":";
    json_text::append_string(res.body, utc_text(b.from_ms + static_cast<int64_t>(i) * b.bucket_ms,
                                                utc_style::iso));
    res.body += ",\"queries\":" + std::to_string(b.queries[i]);
    res.body += ",\"errors\":" + std::to_string(b.errors[i]) + "}";
  }
  res.body += "]}";
  return res;
}

} // namespace

void serve_groups(const std::shared_ptr<node_services>& node, const http::respond_fn& respond) {
  auto active = node->snapshot->load();
  if (!active)
    return respond(http::error_response(503, "no active configuration"));
  std::string out = "[";
  for (const auto& g : active->config->groups) {
    // The slots in use on its members (a cluster in two groups counts in
    // both), against the sum of their limits.
    uint64_t running = 0, limit = 0;
    for (const auto& name : g.members)
      if (auto c = active->clusters.find(name); c != active->clusters.end()) {
        running += c->second->running();
        limit += c->second->limit;
      }
    uint32_t queued = 0;
    if (auto gate = active->group_gates.find(g.name); gate != active->group_gates.end())
      queued = gate->second->queued()->load();
    if (out.size() > 1)
      out += ',';
    out += "{\"name\":";
    json_text::append_string(out, g.name);
    out += ",\"enabled\":";
    out += g.enabled ? "true" : "false";
    out += ",\"members\":[";
    for (size_t i = 0; i < g.members.size(); ++i) {
      if (i > 0)
        out += ',';
      json_text::append_string(out, g.members[i]);
    }
    out += "],\"strategy\":";
    json_text::append_string(out, config::to_string(g.strategy));
    out += ",\"runningQueries\":" + std::to_string(running);
    out += ",\"maxRunningQueries\":" + std::to_string(limit);
    out += ",\"queuedQueries\":" + std::to_string(queued);
    out += ",\"maxQueuedQueries\":" + std::to_string(g.max_queued_queries) + "}";
  }
  http::response res;
  res.body = out + "]";
  respond(std::move(res));
}

void serve_query_stats(const std::shared_ptr<node_services>& node, const http::request& req,
                       const http::respond_fn& respond) {
  auto params = http::query_params(req.target);
  int64_t minutes = 60;
  if (auto m = params.find("minutes"); m != params.end()) {
    const auto& text = m->second;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), minutes);
    if (ec != std::errc{} || end != text.data() + text.size() || minutes < 1 || minutes > 1440)
      return respond(http::error_response(400, "minutes: expected 1 to 1440"));
  }
  // Whole minutes, the current one last.
  constexpr int64_t minute = 60'000;
  auto from = (now_ms() / minute - minutes + 1) * minute;
  query_buckets b{from, minute, static_cast<size_t>(minutes)};
  if (!node->history_store) {
    node->history->count(b);
    return respond(buckets_response(b));
  }
  ask(
    *node->sys, node->history_store, 10s,
    [respond](query_buckets& counted) { respond(buckets_response(counted)); },
    [respond](caf::error& err) {
      respond(http::error_response(code_of(err) == errc::storage_error ? 503 : 504,
                                   code_of(err) ? message_of(err) : caf::to_string(err)));
    },
    atom::stats::value, std::move(b));
}

} // namespace qf::boundary
