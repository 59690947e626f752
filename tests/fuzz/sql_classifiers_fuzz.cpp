// Fuzzes what the fast lanes read from a client's SQL text before it runs
// (sql/statements.hpp): any text is read without a crash, statements split
// within it, and a statement found pure calls none of the functions that
// leave state behind.
#include "protocols/sql/statements.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

namespace {

bool within(std::string_view part, std::string_view whole) {
  return part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto sql = std::string_view{reinterpret_cast<const char*>(data), size};
  std::vector<std::string_view> parts;
  qf::sql::split_statements(sql, parts);
  for (auto part : parts)
    if (!within(part, sql))
      std::abort();
  qf::sql::split_mysql_statements(sql, parts);
  for (auto part : parts)
    if (!within(part, sql))
      std::abort();
  if (qf::sql::calls_only_pure_functions(sql)) {
    if (qf::sql::calls_function(sql, {"nextval", "setval", "set_config", "pg_advisory_lock"},
                                false))
      std::abort();
    // Text it reads is text without what may hide a call from its lexer.
    if (sql.find('(') != std::string_view::npos
        && (sql.find('"') != std::string_view::npos || sql.find("/*") != std::string_view::npos
            || sql.find("--") != std::string_view::npos || sql.find('\\') != std::string_view::npos))
      std::abort();
  }
  (void)qf::sql::leading_keyword(sql);
  (void)qf::sql::leading_keywords(sql, 2);
  (void)qf::sql::after_leading_keyword(sql);
  (void)qf::sql::leaves_session_state(sql);
  (void)qf::sql::changes_session_setting(sql);
  (void)qf::sql::highest_placeholder(sql);
  if (qf::sql::preview(sql, 160).size() > 160)
    std::abort();
  return 0;
}
