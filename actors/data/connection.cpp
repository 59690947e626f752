// Blocking engine calls, confined to detached actors.
#include "actors/data/connection.hpp"

#include <caf/all.hpp>

namespace qf {

namespace {

/// Runs f, turning whatever an engine throws into a "qf" error.
template <class F>
auto guarded(F f) -> caf::result<decltype(f())> {
  try {
    return f();
  } catch (const engines::engine_error& e) {
    return make_error(from_engine(e.kind()), e.what(), e.sqlstate(),
                      e.vendor_code());
  } catch (const std::exception& e) {
    return make_error(errc::engine_internal, e.what());
  }
}

/// Reads the next batch; the cursor is dropped once exhausted or failed.
result_batch next_batch(connection_state& st, uint32_t max_rows) {
  result_batch out;
  try {
    out.more = st.cursor->fetch(out.rows, max_rows);
  } catch (...) {
    st.cursor.reset();
    throw;
  }
  if (!out.more) {
    out.affected = st.cursor->affected_rows();
    st.cursor.reset();
  }
  out.notices = st.conn->take_notices();
  return out;
}

} // namespace

caf::behavior connection_actor(caf::stateful_actor<connection_state>* self,
                               std::shared_ptr<engines::connection> conn) {
  self->state.conn = std::move(conn);
  return {
    [self](atom::execute, const statement_request& req) {
      auto& st = self->state;
      st.cursor.reset();
      return guarded([&] {
        st.conn->set_session(req.session);
        st.cursor = st.conn->run(req.sql, req.params);
        // Read before the first batch: a cursor that ends with it is gone.
        auto backend_id = st.cursor->backend_query_id();
        statement_result out{st.cursor->columns(), next_batch(st, req.max_rows),
                             std::move(backend_id)};
        return out;
      });
    },
    [self](atom::fetch, uint32_t max_rows) {
      auto& st = self->state;
      return guarded([&] {
        if (!st.cursor)
          throw engines::engine_error(engines::error_kind::internal,
                                      "no open result");
        return next_batch(st, max_rows);
      });
    },
    [self](atom::close) { self->state.cursor.reset(); },
  };
}

caf::behavior health_checker(caf::stateful_actor<health_checker_state>* self,
                             config::cluster cfg, config::health_probe probe) {
  self->state.cfg = std::move(cfg);
  self->state.probe = std::move(probe);
  return {
    [self](atom::check, bool count) {
      auto& st = self->state;
      return guarded([&] {
        if (!st.db)
          st.db = engines::open_database(st.cfg);
        if (!st.conn)
          st.conn = st.db->connect();
        try {
          return health_ok{st.db, st.conn->check(st.probe, st.cfg.health_check_query, count)};
        } catch (...) {
          st.conn.reset(); // reconnect on the next check
          throw;
        }
      });
    },
  };
}

} // namespace qf
