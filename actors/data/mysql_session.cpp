// MySQL sessions on top of statement actors.
#include "actors/data/mysql_session.hpp"

#include "actors/data/statement.hpp"
#include "actors/data/wire_session.hpp"
#include "protocols/common/secrets.hpp"

#include <caf/all.hpp>

namespace qf {

namespace {

using self_ptr = caf::stateful_actor<mysql_session_state>*;

/// MySQL error codes for our refusals, each its own.
mysqlwire::error_info error_for(const statement_page& page) {
  const auto& n = page.error_name;
  const auto& msg = page.error_message;
  if (n == "PERMISSION_DENIED")
    return {1227, "42000", msg}; // ER_SPECIFIC_ACCESS_DENIED_ERROR
  if (n == "QUERY_QUEUE_FULL")
    return {1040, "08004", msg}; // ER_CON_COUNT_ERROR
  if (n == "EXCEEDED_TIME_LIMIT")
    return {1205, "HY000", msg}; // ER_LOCK_WAIT_TIMEOUT: capacity wait
  if (n == "USER_CANCELED" || n == "ABANDONED_QUERY")
    return {1317, "70100", msg}; // ER_QUERY_INTERRUPTED
  if (n == "NO_NODES_AVAILABLE" || n == "SERVER_STARTING_UP")
    return {1053, "08S01", msg}; // ER_SERVER_SHUTDOWN
  if (page.error_vendor_code > 0 && page.error_vendor_code < 65536
      && page.error_sqlstate.size() == 5) // a MySQL backend's own error
    return {static_cast<uint16_t>(page.error_vendor_code), page.error_sqlstate, msg};
  if (n == "SYNTAX_ERROR")
    return {1064, "42000", msg}; // ER_PARSE_ERROR
  if (page.error_sqlstate.size() == 5)
    return {1105, page.error_sqlstate, msg};
  return {1105, "HY000", msg}; // ER_UNKNOWN_ERROR
}

void pump(self_ptr self);


bool on_page(self_ptr self, statement_page& page) {
  auto& st = self->state;
  auto& s = *st.session;
  if (page.failed) {
    st.statement = nullptr;
    s.fail(error_for(page));
    pump(self);
    return false;
  }
  if (!st.columns_sent && (!page.columns.empty() || page.done)) {
    st.columns_sent = true;
    s.columns(page.columns);
  }
  if (page.rows.rows() > 0)
    s.rows(page.rows);
  if (page.done) {
    st.statement = nullptr;
    s.complete(page.affected);
    pump(self);
    return false;
  }
  flush_output(self); // stream rows as they come
  return true;
}

/// KILL answers for the connections of the same user only, as MySQL does
/// for users without the PROCESS privilege.
std::string kill_key(uint32_t connection_id, const std::string& user) {
  return "mysql:" + std::to_string(connection_id) + ":" + user;
}

void login(self_ptr self, const mysqlwire::login_event& ev) {
  auto& st = self->state;
  auto active = st.node->snapshot->load();
  if (!active || st.node->draining.load()) {
    st.session->reject({1053, "08S01", "the gateway is not accepting "
                                       "connections (no active "
                                       "configuration, or shutting down)"});
    return;
  }
  const auto& auth = active->config->auth;
  if (auth.enabled) {
    // mysql_native_password is a challenge: no password crosses the wire.
    auto i = auth.users.find(ev.user);
    auto expected = mysqlwire::native_password_token(
      i == auth.users.end() ? std::string{"\x01"} : i->second, st.scramble);
    if (i == auth.users.end() || !secrets_equal(ev.auth_response, expected)) {
      st.node->stats->auth_failed("mysqlWire");
      st.session->reject({1045, "28000", "Access denied for user '" + ev.user
                                           + "' (using password: YES)"});
      return;
    }
  }
  st.user = ev.user;
  auto key = kill_key(st.connection_id, st.user);
  st.node->wire_sessions->add(key, self);
  self->attach_functor([node = st.node, key] { node->wire_sessions->remove(key); });
  st.session->accept();
}

void run(self_ptr self, mysqlwire::query_event& ev) {
  auto& st = self->state;
  statement_spec spec;
  spec.ticket = st.node->next_ticket.fetch_add(1);
  spec.id = st.node->query_id(spec.ticket, "my_");
  spec.sql = std::move(ev.sql);
  spec.params = std::move(ev.params);
  spec.protocol = config::protocol::mysql_wire;
  spec.session.user = st.user;
  spec.session.catalog = st.session->database();
  st.statement = self->spawn(statement_actor, std::move(spec), st.node);
  st.columns_sent = false;
  pull_pages(self, st.statement,
             [self](statement_page& page) { return on_page(self, page); });
}

void kill(self_ptr self, const mysqlwire::kill_event& ev) {
  auto& st = self->state;
  auto target = st.node->wire_sessions->find(kill_key(ev.connection_id, st.user));
  if (!target) {
    st.session->fail({1094, "HY000", "Unknown thread id: "
                                       + std::to_string(ev.connection_id)});
    return;
  }
  self->send(*target, atom::cancel::value, !ev.query_only);
  st.session->complete(0);
}

void pump(self_ptr self) {
  pump_events(self, [self](mysqlwire::session_event& ev) {
    if (auto* l = std::get_if<mysqlwire::login_event>(&ev))
      login(self, *l);
    else if (auto* k = std::get_if<mysqlwire::kill_event>(&ev))
      kill(self, *k);
    else if (std::holds_alternative<mysqlwire::tls_event>(ev))
      self->state.io.start_tls(); // the output went out; the handshake next
    else
      run(self, std::get<mysqlwire::query_event>(ev));
  });
}

} // namespace

caf::behavior mysql_session(self_ptr self, std::shared_ptr<node_services> node,
                            wire_io io, uint32_t connection_id,
                            std::string scramble, bool tls_available) {
  auto& state = self->state;
  state.node = std::move(node);
  state.io = std::move(io);
  state.scramble = std::move(scramble);
  state.connection_id = connection_id;
  mysqlwire::session_options opts{connection_id, state.scramble};
  opts.tls_available = tls_available;
  state.session = std::make_unique<mysqlwire::server_session>(opts);
  flush_output(self); // the greeting
  self->set_exit_handler([self](caf::exit_msg& msg) {
    if (self->state.statement)
      self->send(self->state.statement, atom::cancel::value, false);
    self->quit(msg.reason);
  });
  return {
    [self](atom::data, std::string& bytes) {
      self->state.session->feed(bytes);
      pump(self);
    },
    [self](atom::tls) {
      self->state.session->tls_started();
      pump(self);
    },
    [self](atom::cancel, bool close_connection) { // KILL from another session
      auto& st = self->state;
      if (st.statement)
        self->send(st.statement, atom::cancel::value, false);
      if (close_connection) {
        st.io.close();
        self->quit();
      }
    },
  };
}

} // namespace qf
