// Fuzzes the MySQL server-side decoders: a handshake response first, then
// commands, cut out of the byte stream by the packet framer.
#include "protocols/mysqlwire/packets.hpp"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto input = std::string_view{reinterpret_cast<const char*>(data), size};
  bool first = true;
  while (!input.empty()) {
    qf::mysqlwire::packet p;
    auto r = qf::mysqlwire::next_packet(input, 1 << 20, p);
    if (r.status != qf::mysqlwire::decode_status::ok)
      break;
    if (r.consumed == 0 || r.consumed > input.size())
      __builtin_trap();
    if (first)
      (void) qf::mysqlwire::parse_handshake_response(p.payload);
    else
      (void) qf::mysqlwire::parse_command(p.payload);
    first = false;
    input.remove_prefix(r.consumed);
  }
  size_t pos = 0;
  while (qf::mysqlwire::read_lenenc_int(
    std::string_view{reinterpret_cast<const char*>(data), size}, pos)) {
    // walk the bytes as length-encoded integers
  }
  return 0;
}
