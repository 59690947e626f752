#include "actors/control/packed_record.hpp"

#include <cstdint>
#include <cstring>

namespace qf {

namespace {

// One list of fields for both ways, const or not. The id first, so that
// packed_id() reads no further.
template <class Record, class F>
void each_string(Record& r, F f) {
  for (auto* s : {&r.proxy_query_id, &r.user, &r.source, &r.catalog, &r.schema,
                  &r.cluster_group, &r.cluster_name, &r.engine_type, &r.protocol, &r.sql,
                  &r.status, &r.error_message, &r.routing_trace, &r.worker,
                  &r.backend_query_id, &r.external_url})
    f(*s);
}

template <class Record, class F>
void each_number(Record& r, F f) {
  for (auto* n : {&r.created_at_ms, &r.started_at_ms, &r.finished_at_ms, &r.queue_duration_ms,
                  &r.execution_duration_ms, &r.rows_returned, &r.query_hash,
                  &r.query_parameterized_hash})
    f(*n);
}

template <class T>
void put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

/// Reads a T at `at` and moves past it; false when the bytes end first.
template <class T>
bool take(std::string_view bytes, size_t& at, T& value) {
  if (bytes.size() - at < sizeof(T))
    return false;
  std::memcpy(&value, bytes.data() + at, sizeof(T));
  at += sizeof(T);
  return true;
}

bool take_string(std::string_view bytes, size_t& at, std::string_view& s) {
  uint32_t n = 0;
  if (!take(bytes, at, n) || bytes.size() - at < n)
    return false;
  s = bytes.substr(at, n);
  at += n;
  return true;
}

} // namespace

void pack(const query_record& r, std::string& out) {
  out.clear();
  each_string(r, [&](const std::string& s) {
    put(out, static_cast<uint32_t>(s.size()));
    out.append(s);
  });
  each_number(r, [&](int64_t n) { put(out, n); });
}

query_record unpack(std::string_view bytes) {
  query_record r;
  size_t at = 0;
  bool whole = true; // past a short field, the rest stay empty
  each_string(r, [&](std::string& s) {
    std::string_view text;
    whole = whole && take_string(bytes, at, text);
    if (whole)
      s.assign(text);
  });
  each_number(r, [&](int64_t& n) { whole = whole && take(bytes, at, n); });
  return r;
}

std::string_view packed_id(std::string_view bytes) {
  size_t at = 0;
  std::string_view id;
  take_string(bytes, at, id);
  return id;
}

packed_arrival arrival_of(std::string_view bytes) {
  // Walks the strings' lengths, copying nothing: the dashboard counts
  // every record of the ring under its lock.
  packed_arrival out;
  size_t at = 0;
  bool whole = true;
  query_record shape; // names the fields, in their order
  each_string(shape, [&](const std::string& field) {
    std::string_view text;
    whole = whole && take_string(bytes, at, text);
    if (whole && &field == &shape.status)
      out.status = text;
  });
  if (whole)
    take(bytes, at, out.created_at_ms); // the first number
  return out;
}

} // namespace qf
