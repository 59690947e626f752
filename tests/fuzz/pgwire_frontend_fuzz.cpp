// Fuzzes the PostgreSQL client-side decoders the way a session uses them:
// a startup packet first, then tagged messages until the bytes run out;
// and the same bytes as a binary parameter of every type we read, and as
// the text of a value of every type we encode in binary.
#include "protocols/pgwire/backend.hpp"
#include "protocols/pgwire/frontend.hpp"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto input = std::string_view{reinterpret_cast<const char*>(data), size};
  bool startup = true;
  while (!input.empty()) {
    qf::pgwire::frame f;
    auto r = qf::pgwire::next_frame(input, startup, 1 << 20, f);
    if (r.status != qf::pgwire::decode_status::ok)
      break;
    if (r.consumed == 0 || r.consumed > input.size())
      __builtin_trap();
    if (startup)
      (void) qf::pgwire::parse_startup(f.body);
    else
      (void) qf::pgwire::parse_message(f);
    startup = false;
    input.remove_prefix(r.consumed);
  }
  auto bytes = std::string{reinterpret_cast<const char*>(data), size};
  for (uint32_t oid : {16u, 20u, 21u, 23u, 700u, 701u, 1082u, 1114u, 1184u, 1700u, 2950u})
    (void) qf::pgwire::binary_param_to_text(oid, bytes);
  std::string out;
  for (auto t : {qf::type_id::decimal, qf::type_id::date, qf::type_id::time,
                 qf::type_id::timestamp, qf::type_id::uuid, qf::type_id::bigint})
    (void) qf::pgwire::binary_value({t}, bytes, out);
  return 0;
}
