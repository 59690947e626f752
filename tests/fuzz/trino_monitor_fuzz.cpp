// Fuzzes what the JMX and METRICS monitors read from a cluster: any bytes
// are read or refused, never a crash, and never more names than allowed.
#include "protocols/trino/monitor_documents.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto text = std::string_view{reinterpret_cast<const char*>(data), size};
  (void) qf::trino::parse_jmx_attributes(text);
  if (qf::trino::parse_prometheus_text(text, 16).size() > 16)
    std::abort();
  return 0;
}
