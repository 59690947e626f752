// Fuzzes the YAML config loader: any bytes give a config or problems,
// never a crash or an exception.
#include "protocols/config/loader.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto text = std::string_view{reinterpret_cast<const char*>(data), size};
  auto result = qf::config::load_from_string(text);
  if (result.config && !result.problems.empty())
    __builtin_trap(); // a config is only returned when it is clean
  return 0;
}
