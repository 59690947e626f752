# Writes OUT: a C++ source holding every V<n>__<name>.sql of DIR in version
# order. Run at build time, so a changed migration rebuilds the binary.
file(GLOB files RELATIVE "${DIR}" "${DIR}/V*__*.sql")
list(SORT files COMPARE NATURAL)
set(body "")
set(expected 1)
foreach(f IN LISTS files)
  if(NOT f MATCHES "^V([0-9]+)__(.+)\\.sql$")
    message(FATAL_ERROR "migrations: ${f} is not named V<n>__<name>.sql")
  endif()
  set(version ${CMAKE_MATCH_1})
  set(name ${CMAKE_MATCH_2})
  if(NOT version EQUAL expected)
    message(FATAL_ERROR "migrations: expected V${expected}, found ${f}")
  endif()
  math(EXPR expected "${expected} + 1")
  file(READ "${DIR}/${f}" sql)
  if(sql MATCHES "\\)qfsql\"")
    message(FATAL_ERROR "migrations: ${f} contains the raw string delimiter")
  endif()
  string(APPEND body "  {${version}, \"${name}\", R\"qfsql(${sql})qfsql\"},\n")
endforeach()
file(WRITE "${OUT}.tmp" "// Generated from migrations/*.sql by migrations/embed.cmake.
#include \"migrations/embedded.hpp\"

namespace qf::migrations {

const std::vector<migration>& all() {
  static const std::vector<migration> list{
${body}  };
  return list;
}

} // namespace qf::migrations
")
# Only a changed file is rewritten, so ninja rebuilds nothing needlessly.
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
