// Sharded id -> query actor map.
#include "actors/data/query_registry.hpp"

#include "actors/core/messages.hpp"
#include "protocols/common/secrets.hpp"

#include <caf/send.hpp>

#include <chrono>
#include <functional>

namespace qf {

const query_registry::shard&
query_registry::shard_of(const std::string& id) const {
  return shards_[std::hash<std::string>{}(id) % shards_.size()];
}

query_registry::shard& query_registry::shard_of(const std::string& id) {
  return shards_[std::hash<std::string>{}(id) % shards_.size()];
}

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
           std::chrono::steady_clock::now().time_since_epoch())
    .count();
}

query_summary::query_summary(std::string id, std::string user, std::string protocol,
                             std::string sql_preview) {
  view_.id = std::move(id);
  view_.user = std::move(user);
  view_.protocol = std::move(protocol);
  view_.sql_preview = std::move(sql_preview);
  view_.state = "QUEUED";
}

query_summary::query_summary(std::string user, std::string protocol) : idle_(true) {
  view_.user = std::move(user);
  view_.protocol = std::move(protocol);
}

void query_summary::update(progress p) {
  std::lock_guard guard{mtx_};
  view_.group = std::move(p.group);
  view_.cluster = std::move(p.cluster);
  view_.state = std::move(p.state);
}

void query_summary::begin(std::string_view id, std::string_view sql_preview,
                          std::string_view group, std::string_view cluster) {
  // Assigned into the strings the last statement left: no allocation once
  // they have grown.
  std::lock_guard guard{mtx_};
  view_.id.assign(id);
  view_.sql_preview.assign(sql_preview);
  view_.group.assign(group);
  view_.cluster.assign(cluster);
  view_.state.assign("RUNNING");
  idle_ = false;
}

void query_summary::end() {
  std::lock_guard guard{mtx_};
  idle_ = true;
}

std::optional<statement_view> query_summary::view() const {
  std::lock_guard guard{mtx_};
  if (idle_)
    return std::nullopt;
  return view_;
}

bool query_summary::shows(const std::string& id) const {
  std::lock_guard guard{mtx_};
  return !idle_ && view_.id == id;
}

void query_registry::add(const std::string& id, caf::actor query,
                         std::shared_ptr<query_liveness> live,
                         std::shared_ptr<query_summary> summary, std::string slug) {
  auto& s = shard_of(id);
  std::lock_guard guard{s.mtx};
  s.queries[id] = entry{std::move(query), std::move(live), std::move(summary), {}, {}, {},
                        std::move(slug)};
}

void query_registry::add(const std::string& id, std::function<void()> canceller,
                         std::function<void(const std::string& id)> statement_canceller,
                         std::shared_ptr<query_summary> summary,
                         std::function<void(std::function<void()>)> closer) {
  auto& s = shard_of(id);
  std::lock_guard guard{s.mtx};
  s.queries[id] = entry{nullptr, nullptr, std::move(summary), std::move(canceller),
                        std::move(statement_canceller), std::move(closer), {}};
}

bool query_registry::cancel_statement(const std::string& id) const {
  for (const auto& e : all())
    if (e.statement_canceller && e.summary && e.summary->shows(id)) {
      e.statement_canceller(id); // it checks again, on the session's thread
      return true;
    }
  return false;
}

std::optional<query_registry::entry> query_registry::entry_of(const std::string& id) const {
  const auto& s = shard_of(id);
  std::lock_guard guard{s.mtx};
  auto i = s.queries.find(id);
  if (i == s.queries.end())
    return std::nullopt;
  return i->second;
}

bool query_registry::cancel(const std::string& id) const {
  auto e = entry_of(id);
  if (!e)
    return false;
  // Outside the lock: a canceller may take locks of its own.
  if (e->canceller)
    e->canceller();
  else if (e->actor)
    caf::anon_send(e->actor, atom::cancel::value, false);
  return true;
}

bool query_registry::close(const std::string& id, std::function<void()> closed) const {
  auto e = entry_of(id);
  if (!e)
    return false;
  if (e->closer) {
    e->closer(std::move(closed));
    return true;
  }
  if (e->actor)
    caf::anon_send(e->actor, atom::cancel::value, true);
  closed();
  return true;
}

void query_registry::remove(const std::string& id) {
  auto& s = shard_of(id);
  std::lock_guard guard{s.mtx};
  s.queries.erase(id);
}

std::optional<caf::actor> query_registry::find(const std::string& id) const {
  const auto& s = shard_of(id);
  std::lock_guard guard{s.mtx};
  auto i = s.queries.find(id);
  if (i == s.queries.end())
    return std::nullopt;
  return i->second.actor;
}

std::optional<std::string> query_registry::user_of(const std::string& id) const {
  auto e = entry_of(id);
  if (!e || !e->summary)
    return std::nullopt;
  auto view = e->summary->view();
  return view ? std::optional<std::string>{view->user} : std::nullopt;
}

std::optional<caf::actor> query_registry::find(const std::string& id,
                                               std::string_view slug) const {
  const auto& s = shard_of(id);
  std::lock_guard guard{s.mtx};
  auto i = s.queries.find(id);
  if (i == s.queries.end() || i->second.slug.empty() || !secrets_equal(i->second.slug, slug))
    return std::nullopt;
  return i->second.actor;
}

size_t query_registry::size() const {
  size_t n = 0;
  for (const auto& s : shards_) {
    std::lock_guard guard{s.mtx};
    n += s.queries.size();
  }
  return n;
}

} // namespace qf

namespace qf {

std::vector<query_registry::entry> query_registry::all() const {
  std::vector<entry> out;
  for (const auto& s : shards_) {
    std::lock_guard guard{s.mtx};
    for (const auto& [id, e] : s.queries)
      out.push_back(e);
  }
  return out;
}

} // namespace qf
