#include "actors/control/sweep_locks.hpp"

namespace qf {

namespace {

uint64_t ms_until(sweep_locks::time_point t, sweep_locks::time_point now) {
  if (t <= now)
    return 0;
  return static_cast<uint64_t>(
    std::chrono::duration_cast<std::chrono::milliseconds>(t - now).count());
}

} // namespace

sweep_locks::sweep_locks(uint64_t first_token) : next_token_(first_token == 0 ? 1 : first_token) {
  // nop
}

worker_api::sweep_answer sweep_locks::acquire(const worker_api::sweep_call& c, time_point now) {
  worker_api::sweep_answer a;
  auto& l = locks_[c.name];
  bool free = l.holder.empty() || l.expires <= now;
  if (free || l.holder == c.holder) {
    if (free || l.token == 0) {
      l.holder = c.holder;
      l.token = next_token_++;
    }
    l.expires = now + std::chrono::seconds(c.ttl_secs);
    a.granted = true;
    a.token = l.token;
  }
  a.holder = l.holder;
  a.expires_in_ms = ms_until(l.expires, now);
  return a;
}

std::variant<const sweep_locks::lock*, sweep_locks::not_held>
sweep_locks::held_by_caller(const worker_api::sweep_call& c, time_point now) const {
  auto i = locks_.find(c.name);
  if (i == locks_.end() || i->second.expires <= now)
    return not_held{"the lock \"" + c.name + "\" is not held: acquire it first"};
  if (i->second.holder != c.holder || i->second.token != c.token)
    return not_held{"the lock \"" + c.name + "\" is held by " + i->second.holder
                    + " (or with another token): " + c.holder + " does not hold it"};
  return &i->second;
}

std::variant<worker_api::sweep_answer, sweep_locks::not_held>
sweep_locks::release(const worker_api::sweep_call& c, time_point now) {
  auto held = held_by_caller(c, now);
  if (auto refused = std::get_if<not_held>(&held))
    return std::move(*refused);
  locks_.erase(c.name);
  return worker_api::sweep_answer{};
}

std::variant<worker_api::sweep_answer, sweep_locks::not_held>
sweep_locks::publish(const worker_api::sweep_call& c, const std::set<std::string>& known,
                     time_point now) {
  auto held = held_by_caller(c, now);
  if (auto refused = std::get_if<not_held>(&held))
    return std::move(*refused);
  auto& mine = counts_[c.name];
  for (const auto& count : c.counts)
    if (known.count(count.cluster))
      mine[count.cluster] = published{count.running, c.holder, now};
  return counts(c.name, now);
}

worker_api::sweep_answer sweep_locks::counts(const std::string& name, time_point now) const {
  worker_api::sweep_answer a;
  auto i = counts_.find(name);
  if (i == counts_.end())
    return a;
  for (const auto& [cluster, p] : i->second) {
    if (now - p.at > forget_after)
      continue;
    a.counts.push_back(worker_api::engine_count{
      cluster, p.running, p.publisher,
      static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(now - p.at).count())});
  }
  return a;
}

} // namespace qf
