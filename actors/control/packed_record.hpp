// A query record as one run of bytes: what the in-memory history keeps.
// Ten thousand records of a dozen heap strings each are cold memory by the
// time their slot comes round again, and replacing one freed three or four
// strings scattered over the heap: under pgbench -S that was a tenth of
// the fast lane's user time. One buffer per slot is written front to back.
#pragma once

#include "actors/core/messages.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace qf {

/// Replaces `out` with r's bytes (its capacity reused).
void pack(const query_record& r, std::string& out);

/// The record back; fields of malformed bytes (none we wrote) are empty.
query_record unpack(std::string_view bytes);

/// proxy_query_id alone, without unpacking the rest.
std::string_view packed_id(std::string_view bytes);

/// When it arrived and how it ended, without unpacking the rest.
struct packed_arrival {
  int64_t created_at_ms = 0;
  std::string_view status;
};
packed_arrival arrival_of(std::string_view bytes);

} // namespace qf
