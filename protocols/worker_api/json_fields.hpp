// Reading the required members of a worker-API body (lease and sweep-lock
// calls and answers): a bounded unsigned number, a non-empty name.
#pragma once

#include "protocols/common/json_depth.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace qf::worker_api::fields {

/// Names (of workers, clusters, groups, locks' holders) are at most this
/// long: a DNS name's limit.
constexpr size_t max_name = 253;

/// The body as a JSON object of at most max_bytes and three levels; else
/// false, with why in `error`.
inline bool parse_object(std::string_view body, size_t max_bytes, nlohmann::json& doc,
                         std::string& error) {
  if (body.size() > max_bytes) {
    error = "the body is larger than " + std::to_string(max_bytes / 1024) + " KiB";
    return false;
  }
  if (!json_text::nests_within(body, 3)) {
    error = "the body nests too deep";
    return false;
  }
  doc = nlohmann::json::parse(body, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    error = "the body must be a JSON object";
    return false;
  }
  return true;
}

/// The member `key` as a number from lo to hi; false when absent or not.
inline bool read_uint(const nlohmann::json& doc, const char* key, uint64_t lo, uint64_t hi,
                      uint64_t& out) {
  auto it = doc.find(key);
  if (it == doc.end() || !it->is_number_unsigned())
    return false;
  out = it->get<uint64_t>();
  return out >= lo && out <= hi;
}

/// The member `key` as a string of 1 to max_name characters.
inline bool read_name(const nlohmann::json& doc, const char* key, std::string& out) {
  auto it = doc.find(key);
  if (it == doc.end() || !it->is_string())
    return false;
  const auto& s = it->get_ref<const std::string&>();
  if (s.empty() || s.size() > max_name)
    return false;
  out = s;
  return true;
}

} // namespace qf::worker_api::fields
