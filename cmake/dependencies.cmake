# Third-party targets. Debian ships no CMake package for CAF and only
# pkg-config for libpqxx and MariaDB, so some targets are made by hand.
find_package(Threads REQUIRED)

find_path(CAF_INCLUDE_DIR caf/all.hpp REQUIRED)
find_library(CAF_CORE_LIBRARY caf_core REQUIRED)
add_library(CAF::core UNKNOWN IMPORTED)
set_target_properties(CAF::core PROPERTIES
  IMPORTED_LOCATION "${CAF_CORE_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${CAF_INCLUDE_DIR}"
  INTERFACE_LINK_LIBRARIES Threads::Threads)

find_package(Boost 1.74 REQUIRED)
find_package(OpenSSL REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(spdlog REQUIRED)
find_package(prometheus-cpp CONFIG REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(PostgreSQL REQUIRED)

find_path(DUCKDB_INCLUDE_DIR duckdb.h HINTS "${QF_DUCKDB_ROOT}/include" REQUIRED)
find_library(DUCKDB_LIBRARY duckdb HINTS "${QF_DUCKDB_ROOT}/lib" REQUIRED)
add_library(DuckDB::duckdb SHARED IMPORTED)
set_target_properties(DuckDB::duckdb PROPERTIES
  IMPORTED_LOCATION "${DUCKDB_LIBRARY}"
  IMPORTED_NO_SONAME OFF
  INTERFACE_INCLUDE_DIRECTORIES "${DUCKDB_INCLUDE_DIR}")

if(QF_ENABLE_TESTS)
  find_package(GTest REQUIRED)
  include(GoogleTest)
endif()

# Imported targets from pkg-config are directory-scoped: find them here.
find_package(PkgConfig REQUIRED)
pkg_check_modules(RE2 REQUIRED IMPORTED_TARGET re2)
pkg_check_modules(MARIADB REQUIRED IMPORTED_TARGET libmariadb)
pkg_check_modules(PQXX REQUIRED IMPORTED_TARGET libpqxx)
