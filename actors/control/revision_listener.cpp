#include "actors/control/revision_listener.hpp"

#include "actors/control/database_url.hpp"
#include "actors/core/messages.hpp"

#include <caf/all.hpp>
#include <libpq-fe.h>
#include <spdlog/spdlog.h>

#include <poll.h>

#include <memory>

namespace qf {

namespace {

using namespace std::chrono_literals;

struct pg_closer {
  void operator()(PGconn* c) const {
    PQfinish(c);
  }
};

struct listener_state {
  std::string url;
  caf::actor writer;
  std::unique_ptr<PGconn, pg_closer> conn;
  bool warned = false;
};

bool connect(listener_state& st) {
  st.conn.reset(PQconnectdb(with_timeouts(st.url, 0).c_str()));
  if (PQstatus(st.conn.get()) != CONNECTION_OK) {
    if (!st.warned)
      spdlog::warn("cannot listen for configuration changes: {}",
                   PQerrorMessage(st.conn.get()));
    st.warned = true;
    st.conn.reset();
    return false;
  }
  auto* r = PQexec(st.conn.get(), "LISTEN queryflux_config_revision");
  bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
  PQclear(r);
  if (!ok) {
    st.conn.reset();
    return false;
  }
  if (st.warned)
    spdlog::info("listening for configuration changes again");
  st.warned = false;
  return true;
}

/// Waits up to `wait` for notifications; false when the connection broke.
bool wait_for_notifications(listener_state& st, std::chrono::milliseconds wait) {
  pollfd fd{PQsocket(st.conn.get()), POLLIN, 0};
  if (fd.fd < 0)
    return false;
  if (::poll(&fd, 1, static_cast<int>(wait.count())) < 0)
    return true; // interrupted: look again next tick
  if (fd.revents == 0)
    return true;
  if (!PQconsumeInput(st.conn.get()))
    return false;
  bool any = false;
  while (auto* n = PQnotifies(st.conn.get())) {
    any = true;
    PQfreemem(n);
  }
  if (any)
    caf::anon_send(st.writer, atom::changed::value);
  return true;
}

} // namespace

caf::behavior revision_listener(caf::event_based_actor* self, std::string url,
                                caf::actor writer) {
  auto st = std::make_shared<listener_state>();
  st->url = std::move(url);
  st->writer = std::move(writer);
  self->send(self, atom::tick::value);
  return {
    [self, st](atom::tick) {
      if (!st->conn) {
        if (!connect(*st))
          return self->delayed_send(self, 1s, atom::tick::value);
        caf::anon_send(st->writer, atom::changed::value);
      }
      if (!wait_for_notifications(*st, 250ms)) {
        spdlog::warn("lost the database connection that listens for configuration changes");
        st->conn.reset();
      }
      self->send(self, atom::tick::value);
    },
  };
}

} // namespace qf
