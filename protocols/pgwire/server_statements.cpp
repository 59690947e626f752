#include "protocols/pgwire/server_statements.hpp"

#include "protocols/pgwire/relay.hpp"

#include <algorithm>

namespace qf::pgwire {

std::string statement_key(std::string_view sql, const std::vector<uint32_t>& param_types) {
  std::string key{sql};
  if (std::any_of(param_types.begin(), param_types.end(), [](uint32_t t) { return t != 0; })) {
    key += '\0'; // no SQL text holds one
    for (auto t : param_types)
      key += std::to_string(t) + ',';
  }
  return key;
}

server_statements::server_statements(size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {
  // nop
}

server_statements::use server_statements::prepare(std::string& out, std::string_view sql) {
  for (const auto& name : to_close_)
    close_statement_message(out, name);
  to_close_.clear();
  if (auto hit = by_sql_.find(sql); hit != by_sql_.end()) {
    recent_.splice(recent_.begin(), recent_, hit->second);
    return {recent_.front().name, false};
  }
  if (by_sql_.size() >= capacity_) {
    auto& oldest = recent_.back();
    close_statement_message(out, oldest.name);
    by_sql_.erase(oldest.sql);
    recent_.pop_back();
  }
  // Our prefix keeps clear of names a client might prepare on the same
  // server directly.
  recent_.push_front({std::string{sql}, "qf_s" + std::to_string(++next_)});
  by_sql_.emplace(recent_.front().sql, recent_.begin());
  return {recent_.front().name, true};
}

void server_statements::failed(std::string_view sql) {
  auto i = by_sql_.find(sql);
  if (i == by_sql_.end())
    return;
  auto at = i->second;
  by_sql_.erase(i);
  close_later(std::move(at->name));
  recent_.erase(at);
}

void server_statements::forget_all() {
  for (auto& e : recent_)
    close_later(std::move(e.name));
  by_sql_.clear();
  recent_.clear();
}

void server_statements::close_later(std::string name) {
  to_close_.push_back(std::move(name));
}

} // namespace qf::pgwire
