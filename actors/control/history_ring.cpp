// In-memory query history.
#include "actors/control/history_ring.hpp"

#include "actors/control/packed_record.hpp"
#include "protocols/worker_api/history_batch.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace qf {

namespace {

nlohmann::json or_null(const std::string& s) {
  return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s);
}

nlohmann::json fingerprint_json(int64_t hash) {
  return hash == 0 ? nlohmann::json(nullptr) : nlohmann::json(std::to_string(hash));
}

nlohmann::json json_of(const query_record& r) {
  // Fingerprints are computed when a record is written down or sent on;
  // one the ring holds gets them here.
  auto prints = worker_api::fingerprints_of(r);
  auto trace = nlohmann::json::parse(r.routing_trace, nullptr, false);
  return {
    {"proxyQueryId", r.proxy_query_id},
    {"user", r.user},
    {"source", r.source},
    {"catalog", r.catalog},
    {"schema", r.schema},
    {"clusterGroup", r.cluster_group},
    {"clusterName", r.cluster_name},
    {"engineType", r.engine_type},
    {"protocol", r.protocol},
    {"sql", r.sql},
    {"status", r.status},
    {"errorMessage", r.error_message.empty() ? nlohmann::json(nullptr)
                                             : nlohmann::json(r.error_message)},
    {"routingTrace", trace.is_discarded() ? nlohmann::json(nullptr) : trace},
    {"createdAtMs", r.created_at_ms},
    {"startedAtMs", r.started_at_ms},
    {"finishedAtMs", r.finished_at_ms},
    {"queueDurationMs", r.queue_duration_ms},
    {"executionDurationMs", r.execution_duration_ms},
    {"rowsReturned", r.rows_returned},
    {"worker", r.worker.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.worker)},
    {"backendQueryId", or_null(r.backend_query_id)},
    {"externalUrl", or_null(r.external_url)},
    // Trino's own page of the query, where its cluster has an externalUrl.
    {"backendQueryUrl", r.engine_type == "trino" && !r.external_url.empty()
                            && !r.backend_query_id.empty()
                          ? nlohmann::json(r.external_url + "/ui/query.html?" + r.backend_query_id)
                          : nlohmann::json(nullptr)},
    // As text: a JavaScript reader would round a 64-bit number.
    {"queryHash", fingerprint_json(prints.query)},
    {"queryParameterizedHash", fingerprint_json(prints.parameterized)},
  };
}

bool matches(const query_record& r, const history_filter& f) {
  auto same = [](const std::string& want, const std::string& have) {
    return want.empty() || want == have;
  };
  return same(f.user, r.user) && same(f.cluster_group, r.cluster_group)
         && same(f.cluster_name, r.cluster_name) && same(f.status, r.status)
         && same(f.worker, r.worker) && same(f.source, r.source)
         && same(f.external_url, r.external_url)
         && (f.query_id.empty() || f.query_id == r.proxy_query_id
             || f.query_id == r.backend_query_id)
         && (f.search.empty() || r.sql.find(f.search) != std::string::npos)
         && (f.from_ms == 0 || r.created_at_ms >= f.from_ms)
         && (f.to_ms == 0 || r.created_at_ms <= f.to_ms);
}

} // namespace

std::string to_json(const query_record& r) {
  return json_of(r).dump(-1, ' ', false,
                         nlohmann::json::error_handler_t::replace);
}

history_ring::history_ring(size_t capacity)
  : capacity_(std::max<size_t>(capacity, 1)) {
  // nop
}

const std::string& history_ring::newest(size_t i) const {
  auto n = records_.size();
  return records_[(next_ + n - 1 - i) % n];
}

void history_ring::record(query_record r) {
  // Packed before the lock; the slot it replaces becomes the next one's
  // buffer.
  thread_local std::string packed;
  pack(r, packed);
  std::lock_guard guard{mtx_};
  // A window, not a set of every id: a hash set over 10,000 records cost
  // the PostgreSQL fast lane more than the rest of its bookkeeping.
  // Ids share their long date prefix and differ at the end: compare there.
  const auto& id = r.proxy_query_id;
  auto window = std::min(records_.size(), duplicate_window);
  for (size_t i = 0; i < window; ++i) {
    auto seen = packed_id(newest(i));
    if (seen.size() == id.size() && std::equal(seen.rbegin(), seen.rend(), id.rbegin()))
      return;
  }
  if (records_.size() < capacity_) {
    records_.push_back(std::exchange(packed, {}));
    next_ = records_.size() % capacity_;
    return;
  }
  records_[next_].swap(packed); // the oldest goes
  next_ = (next_ + 1) % capacity_;
}

std::string history_ring::list(const history_filter& f) const {
  auto out = nlohmann::json::array();
  size_t total = 0;
  {
    std::lock_guard guard{mtx_};
    for (size_t i = 0; i < records_.size(); ++i) {
      auto r = unpack(newest(i));
      if (!matches(r, f))
        continue;
      if (total >= f.offset && out.size() < f.limit)
        out.push_back(json_of(r));
      ++total;
    }
  }
  nlohmann::json page{{"total", total}, {"queries", std::move(out)}};
  return page.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<std::string> history_ring::get(const std::string& id) const {
  if (auto r = record(id))
    return to_json(*r);
  return std::nullopt;
}

std::optional<query_record> history_ring::record(const std::string& id) const {
  std::lock_guard guard{mtx_};
  for (size_t i = 0; i < records_.size(); ++i)
    if (packed_id(newest(i)) == id)
      return unpack(newest(i));
  return std::nullopt;
}

void history_ring::count(query_buckets& b) const {
  std::lock_guard guard{mtx_};
  for (const auto& packed : records_) {
    auto a = arrival_of(packed);
    b.count(a.created_at_ms, a.status == "Failed" || a.status == "Denied");
  }
}

} // namespace qf
