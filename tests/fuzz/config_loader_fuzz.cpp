// Fuzzes the YAML config loader: any bytes give a config or problems,
// never a crash or an exception. The same bytes also stand in for a
// cluster document stored in the database, which is read back the same way.
#include "protocols/config/fleet.hpp"
#include "protocols/config/loader.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto text = std::string_view{reinterpret_cast<const char*>(data), size};
  auto result = qf::config::load_from_string(text);
  if (result.config && !result.problems.empty())
    __builtin_trap(); // a config is only returned when it is clean
  qf::config::fleet stored;
  stored.clusters.emplace_back("c", std::string{text});
  stored.groups.emplace_back("g", R"({"members":["c"]})");
  auto merged = qf::config::load_with_fleet("queryflux: {}\n", stored);
  if (merged.config && !merged.problems.empty())
    __builtin_trap();
  return 0;
}
