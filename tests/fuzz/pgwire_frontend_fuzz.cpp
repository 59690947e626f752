// Fuzzes the PostgreSQL client-side decoders the way a session uses them:
// a startup packet first, then tagged messages until the bytes run out.
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
  return 0;
}
