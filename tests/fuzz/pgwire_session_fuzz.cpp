// Fuzzes the PostgreSQL session state machine with a driver that answers
// every statement (some as a relayed COPY FROM STDIN) and keeps the
// settings its statements and startup packet give: whatever the client
// sends, the session never crashes, never emits an unframed message, never
// forwards a partial one to the server, and stays within the protocol.
#include "protocols/common/byte_reader.hpp"
#include "protocols/pgwire/frontend.hpp"
#include "protocols/pgwire/session.hpp"
#include "protocols/sql/session_settings.hpp"

#include <cstddef>
#include <cstdint>

namespace {

/// Every message the session writes must be a well-framed one.
void check_framing(std::string_view out, bool in_startup = false) {
  // Before startup completes, SSLRequest gets a bare one-byte 'N'.
  while (in_startup && !out.empty() && out[0] == 'N')
    out.remove_prefix(1);
  while (!out.empty()) {
    qf::pgwire::frame f;
    auto r = qf::pgwire::next_frame(out, false, 1 << 30, f);
    if (r.status != qf::pgwire::decode_status::ok)
      __builtin_trap();
    out.remove_prefix(r.consumed);
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  qf::pgwire::session_options opts;
  opts.server_version = "15.0";
  opts.max_message = 1 << 16;
  opts.process_id = 1;
  opts.secret_key = 2;
  // Some settings statements go to the engine, some are answered here.
  opts.settings_on_server = [](std::string_view sql) { return sql.size() % 2 == 0; };
  // Half the scripts run in one implicit transaction, BEGIN and COMMIT ours.
  opts.scripts_in_one_transaction = [](std::string_view sql) { return sql.size() % 2 == 1; };
  // A third of the statements described are described by the server.
  opts.statements_described_on_server = [](std::string_view sql) { return sql.size() % 3 == 0; };
  qf::pgwire::server_session s{opts};
  auto input = std::string_view{reinterpret_cast<const char*>(data), size};
  // Feed in uneven chunks, as a socket would deliver it.
  size_t chunk = size % 7 + 1;
  int steps = 0;
  bool accepted = false;
  bool copying = false;
  qf::sql::session_settings settings;
  qf::sql::mysql_variables variables;
  while (!input.empty() && !s.closing() && ++steps < 10000) {
    auto n = std::min(chunk, input.size());
    s.feed(input.substr(0, n));
    input.remove_prefix(n);
    if (copying) {
      check_framing(s.take_copy_messages()); // whole client messages only
      if (s.copy_in_sent() || n % 5 == 0) { // the client ended it, or the server did
        s.relay_end(n % 2 == 0);
        copying = false;
      }
    }
    while (auto ev = s.next_event()) {
      if (std::holds_alternative<qf::pgwire::startup_event>(*ev)) {
        check_framing(s.take_output(), !accepted);
        // What the driver makes of the startup packet's settings.
        for (const auto& [name, value] : qf::sql::startup_settings(s.startup_params()))
          settings.start_with(name, value);
        s.accept();
        accepted = true;
      } else if (auto* run = std::get_if<qf::pgwire::run_event>(&*ev)) {
        // What the driver keeps of a statement that succeeded, and gives a
        // connection whose settings were another's.
        auto before = settings;
        settings.apply(run->sql);
        variables.apply(run->sql);
        (void)before.prelude_from(settings);
        (void)qf::sql::mysql_variables{}.prelude_from(variables);
        // Alternate success and failure, with and without rows.
        if (s.relays_a_statement_describe()) {
          // The server's description, or its error; the statement's
          // parameter types from it are what its binary parameters are
          // read by next.
          auto types = s.described_types();
          types.resize(types.size() + run->sql.size() % 3, run->sql.size() % 2 ? 23 : 17);
          std::string body;
          qf::byte_writer::put_be_u16(body, static_cast<uint16_t>(types.size()));
          for (auto t : types)
            qf::byte_writer::put_be_u32(body, t);
          std::string described(1, 't');
          qf::byte_writer::put_be_u32(described, static_cast<uint32_t>(body.size() + 4));
          s.relay(described + body + std::string("n\0\0\0\4", 5));
          s.relay_end(run->sql.size() % 4 == 0);
        } else if (run->sql.size() % 5 == 1 && s.relayable() && s.copy_in_start()) {
          copying = true;
          check_framing(s.take_copy_messages());
        } else if (run->sql.size() % 3 == 0) {
          s.fail({"ERROR", "42000", "refused", ""});
        } else if (s.columns({{"c", {qf::type_id::varchar}}})) {
          // Three rows: Executes with a row limit suspend on them.
          qf::row_batch b;
          b.width = 1;
          b.cells.assign(3, run->sql);
          s.rows(b);
          if (!s.wants_rows() && run->sql.size() % 2 == 0)
            s.suspend();
          else
            s.complete(-1);
        }
      } else if (std::holds_alternative<qf::pgwire::resume_event>(*ev)) {
        qf::row_batch b;
        b.width = 1;
        b.cells.assign(2, "more");
        s.rows(b);
        if (s.wants_rows())
          s.complete(-1);
        else
          s.suspend();
      }
    }
    check_framing(s.take_output(), !accepted);
  }
  return 0;
}
