// Fuzzes what a Trino cluster sends QueryFlux: a QueryResults document is
// read, or refused with std::invalid_argument; rows always fit the columns.
#include "protocols/trino/backend_results.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<qf::column> known{{"a", {qf::type_id::varbinary}},
                                             {"b", {qf::type_id::timestamp_tz, 3}}};
  auto text = std::string_view{reinterpret_cast<const char*>(data), size};
  for (const auto* columns : {static_cast<const std::vector<qf::column>*>(nullptr), &known}) {
    try {
      auto page = qf::trino::parse_backend_page(text, columns);
      if (page.rows.width > 0 && page.rows.cells.size() % page.rows.width != 0)
        std::abort();
    } catch (const std::invalid_argument&) {
      // refused, as it should be
    }
  }
  return 0;
}
