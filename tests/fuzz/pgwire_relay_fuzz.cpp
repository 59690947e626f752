// Fuzzes what a PostgreSQL server sends the fast lane's relay: any bytes
// are read without a crash, never more than given, and what is relayed is
// whole messages.
#include "protocols/pgwire/relay.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto in = std::string_view{reinterpret_cast<const char*>(data), size};
  auto r = qf::pgwire::relay_messages(in, 1 << 16);
  if (r.consumed > in.size())
    std::abort();
  // The relayed bytes parse again as whole messages, none of them partial.
  auto again = qf::pgwire::relay_messages(r.messages, 1 << 20);
  if (again.fault || again.need != 0 || again.consumed != r.messages.size())
    std::abort();
  // Errors' positions moved (a statement in the middle of a Query): still
  // whole messages.
  qf::pgwire::relayed shifted;
  qf::pgwire::relay_messages(in, shifted, 1 << 16, qf::pgwire::server_errors::relayed,
                             static_cast<int32_t>(size % 1000));
  auto reread = qf::pgwire::relay_messages(shifted.messages, 1 << 20);
  if (reread.fault || reread.need != 0 || reread.consumed != shifted.messages.size())
    std::abort();
  // A Describe's answer, read for its parameter types: within the bytes.
  if (auto types = qf::pgwire::parameter_types_of(in); types && types->size() * 4 > size)
    std::abort();
  return 0;
}
