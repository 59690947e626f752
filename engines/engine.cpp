// Picks the engine implementation for a cluster.
#include "engines/engine.hpp"

#include "engines/duckdb_engine.hpp"
#include "engines/mysql_engine.hpp"
#include "engines/postgres_engine.hpp"
#include "engines/sqlite_engine.hpp"
#include "engines/trino_engine.hpp"
#include "protocols/sql/statements.hpp"

#include <charconv>

namespace qf::engines {

void connection::probe(const std::string& health_check_query) {
  auto cur = execute(health_check_query);
  row_batch sink;
  while (cur->fetch(sink, 256))
    sink.cells.clear();
}

std::optional<engine_load> connection::check(const config::health_probe& how,
                                             const std::string& health_check_query,
                                             bool count) {
  if (how.type == config::monitor_type::noop)
    return std::nullopt;
  probe(health_check_query);
  if (!count && how.type != config::monitor_type::jdbc)
    return std::nullopt;
  auto running = running_count();
  if (!running)
    return std::nullopt;
  return engine_load{*running, 0, {}};
}

std::optional<uint32_t> connection::count_of(const std::string& sql) {
  try {
    auto cur = execute(sql);
    row_batch rows;
    bool more = cur->fetch(rows, 16);
    // Read to the end (the connection serves the next check), a batch at
    // a time: a full batch would take no more rows.
    for (row_batch rest; more; rest.cells.clear())
      more = cur->fetch(rest, 256);
    if (rows.rows() == 0 || !rows.at(0, 0))
      return std::nullopt;
    const auto& text = *rows.at(0, 0);
    uint32_t n = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc{} || end != text.data() + text.size())
      return std::nullopt;
    return n;
  } catch (const engine_error&) {
    return std::nullopt;
  }
}

std::unique_ptr<cursor> connection::run(const std::string& sql, const parameters& params) {
  if (left_state_ && !in_transaction()) {
    renew_session();
    left_state_ = false;
  }
  auto kw = sql::leading_keyword(sql);
  left_state_ = left_state_ || kw == "SET" || kw == "USE" || kw == "RESET"
                || sql::leaves_session_state(sql);
  return execute(sql, params);
}

std::shared_ptr<database> open_database(const config::cluster& cfg) {
  switch (cfg.engine) {
    case config::engine_kind::duck_db:
      return open_duckdb(cfg);
    case config::engine_kind::sqlite:
      return open_sqlite(cfg);
    case config::engine_kind::postgres:
      return open_postgres(cfg);
    case config::engine_kind::mysql:
      return open_mysql(cfg);
    case config::engine_kind::trino:
      return open_trino(cfg);
  }
  throw engine_error(error_kind::internal, "unknown engine");
}

} // namespace qf::engines
