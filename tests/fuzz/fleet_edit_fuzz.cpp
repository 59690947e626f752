// Fuzzes the admin API's bodies: a change to clusters, groups, routing or
// Trino Gateway backends is either refused with a status and a reason, or
// gives a fleet that loads back into a config.
#include "protocols/config/fleet_edit.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace {

constexpr const char* file = R"(
queryflux: { adminApi: { port: 9100 } }
clusters:
  a: { engine: duckDb }
  b: { engine: sqlite }
clusterGroups:
  g: { members: [a, b] }
  adhoc: { members: [b] }
routingFallback: g
)";

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace qf::config;
  if (size == 0)
    return 0;
  static const fleet before = fleet_of(file);
  auto body = std::string_view{reinterpret_cast<const char*>(data) + 1, size - 1};
  fleet_edit e;
  switch (data[0] % 6) {
    case 0:
      e = put_item(before, file, fleet_item::cluster, "c", body);
      break;
    case 1:
      e = put_item(before, file, fleet_item::group, "g", body);
      break;
    case 2:
      e = put_routing(before, file, body);
      break;
    case 3:
      e = put_backend(before, file, body, data[0] & 0x80);
      break;
    case 4:
      e = delete_backend(before, file, std::string{body});
      break;
    default:
      e = delete_item(before, file, fleet_item::cluster, std::string{body});
  }
  bool ok = e.status == 200 || e.status == 201;
  if (ok != e.config.has_value())
    std::abort();
  if (!ok && (e.status < 400 || e.message.empty()))
    std::abort();
  if (ok && !load_with_fleet(file, e.next).config)
    std::abort();
  return 0;
}
