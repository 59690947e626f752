// Fuzzes the MySQL server-side decoders: a handshake response first, then
// commands, cut out of the byte stream by the packet framer; prepared
// statements' binary parameters, and binary rows built from garbage text.
#include "protocols/mysqlwire/binary.hpp"
#include "protocols/mysqlwire/packets.hpp"
#include "protocols/mysqlwire/session.hpp"

#include <cstddef>
#include <cstdint>

static std::string_view input_all(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto input = std::string_view{reinterpret_cast<const char*>(data), size};
  bool first = true;
  while (!input.empty()) {
    qf::mysqlwire::packet p;
    auto r = qf::mysqlwire::next_packet(input, 1 << 20, p);
    if (r.status != qf::mysqlwire::decode_status::ok)
      break;
    if (r.consumed == 0 || r.consumed > input.size())
      __builtin_trap();
    if (first)
      (void) qf::mysqlwire::parse_handshake_response(p.payload);
    else // COM_CHANGE_USER's layout follows the client's capabilities
      (void) qf::mysqlwire::parse_command(p.payload, size % 3 == 0 ? 0 : ~0u);
    first = false;
    input.remove_prefix(r.consumed);
  }
  for (size_t count : {1, 3, 9}) {
    std::vector<qf::mysqlwire::param_type> types;
    (void) qf::mysqlwire::decode_parameters(input_all(data, size), count, types);
  }
  // The session state machine, with a driver that accepts every login and
  // answers every query with one row of the query's text in every type
  // (binary rows parse that text as numbers and dates).
  qf::mysqlwire::session_options opts{1, std::string(20, 'x')};
  // Some SETs go to the engine, some are answered here.
  opts.settings_on_server = [](std::string_view sql) { return sql.size() % 2 == 0; };
  opts.tls_available = size % 2 == 0; // half the inputs may ask for TLS
  qf::mysqlwire::server_session s{opts};
  s.take_output();
  s.feed(std::string_view{reinterpret_cast<const char*>(data), size});
  for (int steps = 0; steps < 1000; ++steps) {
    auto ev = s.next_event();
    if (!ev)
      break;
    if (std::holds_alternative<qf::mysqlwire::login_event>(*ev)) {
      s.accept();
    } else if (std::holds_alternative<qf::mysqlwire::tls_event>(*ev)) {
      s.tls_started();
    } else if (std::holds_alternative<qf::mysqlwire::kill_event>(*ev)) {
      s.complete(0);
    } else {
      using qf::type_id;
      std::vector<qf::column> cols;
      for (auto t : {type_id::varchar, type_id::boolean, type_id::smallint,
                     type_id::integer, type_id::bigint, type_id::real,
                     type_id::double_precision, type_id::date, type_id::time,
                     type_id::timestamp})
        cols.push_back({"c", {t}});
      if (size % 4 == 0) { // as a MariaDB cluster describes them
        std::vector<qf::mysqlwire::server_field> fields;
        uint8_t code = 0;
        for (const auto& col : cols)
          fields.push_back(qf::mysqlwire::server_field_of(
            {"db", "t", "t", col.name, col.name, 45, 10, code++, static_cast<uint16_t>(size), 0}));
        s.columns(cols, std::move(fields));
      } else {
        s.columns(cols);
      }
      const auto& sql = std::get<qf::mysqlwire::query_event>(*ev).sql;
      qf::row_batch rows{cols.size(), std::vector<qf::cell>(cols.size(), sql)};
      s.rows(rows);
      if (sql.size() % 3 == 0) { // a CALL's: a second result follows
        s.result_ends(-1);
        s.columns({});
      }
      if (sql.size() % 5 == 0) { // a failure ends a script early
        s.fail({1064, "42000", "syntax"});
      } else {
        if (sql.size() % 7 == 0) { // what SHOW WARNINGS then tells, and the session's values
          s.warnings({{"Warning", static_cast<uint32_t>(sql.size()), sql}});
          s.found_rows(sql.size());
          s.last_insert_id(sql.size());
        }
        s.complete(qf::mysqlwire::command_result{-1, 0, static_cast<uint16_t>(sql.size() % 3), sql});
      }
    }
  }
  auto out = s.take_output();
  std::string_view rest = out;
  while (!rest.empty()) { // everything written must be well framed
    qf::mysqlwire::packet p;
    auto r = qf::mysqlwire::next_packet(rest, 1 << 30, p);
    if (r.status != qf::mysqlwire::decode_status::ok)
      __builtin_trap();
    rest.remove_prefix(r.consumed);
  }
  size_t pos = 0;
  while (qf::mysqlwire::read_lenenc_int(
    std::string_view{reinterpret_cast<const char*>(data), size}, pos)) {
    // walk the bytes as length-encoded integers
  }
  return 0;
}
