#include "actors/worker/history_spool.hpp"

#include "actors/node/metrics.hpp"
#include "actors/node/node.hpp"
#include "protocols/worker_api/history_batch.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <strings.h>

namespace qf {

namespace {

using namespace std::chrono_literals;
using self_ptr = history_spool_actor::stateful_pointer<history_spool_state>;

/// How long a Retry-After may hold the spool at most.
constexpr auto longest_retry_after = 300s;
/// While flushing at shutdown, no pause is longer than this.
constexpr auto flush_pause = 250ms;

struct destination {
  std::string url;
  bool control_plane = true;
  config::redaction policy = config::redaction::full;
};

/// Where records go and how they are redacted, as the active snapshot
/// says; none before the first snapshot.
std::optional<destination> destination_of(const history_spool_settings& cfg) {
  auto active = cfg.cell->load();
  if (!active)
    return std::nullopt;
  const auto& api = active->config->queryflux.worker_api;
  destination d;
  d.policy = api.history_redaction;
  auto endpoint = cfg.endpoint ? cfg.endpoint : api.history_endpoint;
  if (endpoint) {
    d.url = *endpoint;
    d.control_plane = false;
  } else {
    d.url = cfg.control_plane.url + "/worker/query-records";
  }
  return d;
}

void count_overflow(self_ptr self) {
  auto& st = self->state;
  if (auto n = st.cfg->spool->take_dropped(); n > 0) {
    st.status.dropped += n;
    st.cfg->stats->uplink_dropped("overflow", n);
  }
}

void publish_depth(self_ptr self) {
  auto& st = self->state;
  st.status.queued = st.cfg->spool->size() + (st.in_flight ? st.batch.size() : 0);
  st.cfg->stats->uplink_queued(st.status.queued);
}

void answer_flush(self_ptr self) {
  auto& st = self->state;
  if (!st.flushing)
    return;
  st.flushing->deliver(static_cast<uint64_t>(st.cfg->spool->size()));
  st.flushing.reset();
}

/// The next look at the spool after `wait`; an earlier one planned is
/// forgotten.
void schedule(self_ptr self, caf::timespan wait) {
  self->delayed_send(self, wait, atom::tick::value, ++self->state.tick_generation);
}

/// Sends the next batch if one waits and none is out.
void send_next(self_ptr self) {
  auto& st = self->state;
  count_overflow(self);
  if (st.in_flight || self->clock().now() < st.resume_at)
    return publish_depth(self);
  auto to = destination_of(*st.cfg);
  if (!to) {
    publish_depth(self);
    return answer_flush(self); // no policy yet: nothing may leave
  }
  st.status.destination = to->url;
  st.batch = st.cfg->spool->take(worker_api::max_history_records);
  if (st.batch.empty()) {
    publish_depth(self);
    return answer_flush(self);
  }
  for (auto& r : st.batch)
    worker_api::redact(r, to->policy);
  http_call call;
  call.method = "POST";
  call.url = to->url;
  call.timeout = st.cfg->request_timeout;
  call.headers = {{"Content-Type", "application/json"},
                  {"X-QueryFlux-Worker", st.cfg->worker_name}};
  if (to->control_plane) // never to an endpoint of another kind
    call.headers.emplace_back("Authorization",
                              "Bearer " + st.cfg->control_plane.shared_secret);
  call.body = worker_api::encode_history_batch(st.batch);
  st.in_flight = true;
  publish_depth(self);
  send_for<history_spool_actor>(*st.cfg->transport, std::move(call), self,
                                atom::delivered::value, ++st.seq);
}

/// Seconds of a Retry-After header, if the answer has one.
std::optional<caf::timespan> retry_after(const http_outcome& o) {
  for (const auto& [name, value] : o.headers) {
    if (name.size() != 11 || strncasecmp(name.c_str(), "retry-after", 11) != 0)
      continue;
    int64_t secs = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), secs);
    if (ec == std::errc{} && end == value.data() + value.size() && secs >= 0)
      return std::min<caf::timespan>(std::chrono::seconds(secs), longest_retry_after);
  }
  return std::nullopt;
}

/// A control plane that does not read this batch format yet: the records
/// wait for it to be upgraded.
bool refuses_version(const http_outcome& o) {
  return o.status == 400 && o.body.find("\"unsupportedSchemaVersion\"") != std::string::npos;
}

/// The pause before batch n+1 after n failures in a row: doubling, with
/// jitter (half to all of it), so that workers cut off together do not
/// come back together.
caf::timespan backoff(self_ptr self, const http_outcome& o) {
  auto& st = self->state;
  auto step = std::min<uint32_t>(st.failures - 1, 16);
  auto full = std::min<caf::timespan>(st.cfg->backoff_first * (int64_t{1} << step),
                                      st.cfg->backoff_last);
  std::uniform_int_distribution<int64_t> half{full.count() / 2, full.count()};
  caf::timespan pause{half(st.jitter)};
  if (auto asked = retry_after(o))
    pause = std::max(pause, *asked);
  return st.flushing ? std::min<caf::timespan>(pause, flush_pause) : pause;
}

void delivered(self_ptr self, uint64_t n, const http_outcome& o) {
  auto& st = self->state;
  if (n != st.seq || !st.in_flight)
    return; // an answer to a batch given up on
  st.in_flight = false;
  auto batch = std::move(st.batch);
  st.batch.clear();
  const bool ok = o.status >= 200 && o.status < 300;
  const bool again = !o.answered() || o.status == 429 || o.status >= 500 || refuses_version(o);
  if (ok) {
    st.status.sent += batch.size();
    if (auto a = worker_api::decode_history_answer(o.body))
      st.status.duplicates += a->duplicates;
    st.cfg->stats->uplink_sent(batch.size());
    st.failures = 0;
    st.status.last_error.clear();
  } else if (again) {
    st.cfg->spool->put_back(std::move(batch));
    ++st.failures;
    st.cfg->stats->uplink_failed();
    if (st.status.last_error.empty() || st.failures == 1)
      spdlog::warn("query history: {} records stay spooled, {} did not take them: {}",
                   st.cfg->spool->size(), st.status.destination, o.describe());
    st.status.last_error = o.describe();
    auto pause = backoff(self, o);
    st.resume_at = self->clock().now() + pause;
    schedule(self, pause);
    if (st.flushing && refuses_version(o))
      answer_flush(self); // waiting longer will not help at shutdown
    return publish_depth(self);
  } else {
    st.status.dropped += batch.size();
    st.cfg->stats->uplink_dropped("rejected", batch.size());
    st.status.last_error = o.describe();
    spdlog::error("query history: {} dropped a batch of {} records: {}", st.status.destination,
                  batch.size(), o.describe());
  }
  send_next(self); // the next batch at once, if there is one
  if (!st.in_flight)
    schedule(self, st.cfg->interval);
}

} // namespace

history_spool_actor::behavior_type
history_spool(history_spool_actor::stateful_pointer<history_spool_state> self,
              std::shared_ptr<const history_spool_settings> cfg) {
  self->state.cfg = std::move(cfg);
  self->state.cfg->stats->expose_uplink();
  schedule(self, caf::timespan{0});
  return {
    [self](atom::get) {
      count_overflow(self);
      publish_depth(self);
      return self->state.status;
    },
    [self](atom::flush) -> caf::result<uint64_t> {
      auto& st = self->state;
      auto promise = self->make_response_promise<uint64_t>();
      if (st.flushing) // one flush at a time: the earlier caller gives way
        st.flushing->deliver(static_cast<uint64_t>(st.cfg->spool->size()));
      st.flushing = promise;
      auto now = self->clock().now();
      st.resume_at = std::min(st.resume_at, now + flush_pause);
      send_next(self);
      if (!st.in_flight && st.flushing)
        schedule(self, std::max<caf::timespan>(st.resume_at - now, caf::timespan{0}));
      return promise;
    },
    [self](atom::tick, uint64_t generation) {
      auto& st = self->state;
      if (generation != st.tick_generation)
        return;
      send_next(self);
      if (st.in_flight)
        return; // its answer moves on
      auto now = self->clock().now();
      schedule(self, now < st.resume_at ? st.resume_at - now : st.cfg->interval);
    },
    [self](atom::delivered, uint64_t n, http_outcome& o) { delivered(self, n, o); },
  };
}

} // namespace qf
