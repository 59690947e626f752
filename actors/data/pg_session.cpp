// PostgreSQL sessions on top of statement actors.
#include "actors/data/pg_session.hpp"

#include "actors/data/statement.hpp"
#include "actors/data/wire_session.hpp"
#include "protocols/common/secrets.hpp"

#include <caf/all.hpp>

#include <utility>

namespace qf {

namespace {

using self_ptr = caf::stateful_actor<pg_session_state>*;

/// SQLSTATEs for our failures: each refusal has its own.
std::string sqlstate_for(const std::string& error_name) {
  if (error_name == "PERMISSION_DENIED")
    return "42501"; // insufficient_privilege: a routing rule denied it
  if (error_name == "QUERY_QUEUE_FULL")
    return "53300"; // too_many_connections
  if (error_name == "EXCEEDED_TIME_LIMIT")
    return "53400"; // configuration_limit_exceeded: capacity wait
  if (error_name == "USER_CANCELED" || error_name == "ABANDONED_QUERY")
    return "57014"; // query_canceled
  if (error_name == "NO_NODES_AVAILABLE")
    return "53000"; // insufficient_resources
  if (error_name == "SERVER_STARTING_UP")
    return "57P03"; // cannot_connect_now: no active configuration
  if (error_name == "SYNTAX_ERROR")
    return "42601";
  if (error_name == "GENERIC_USER_ERROR")
    return "42000";
  return "XX000";
}

void pump(self_ptr self);

/// Takes a transaction's connection back from its last statement.
void take_pin(self_ptr self, statement_page& page) {
  auto& st = self->state;
  if (page.pinned)
    st.pinned = std::move(page.pinned);
  if (st.step == pgwire::transaction_step::end)
    st.pinned.reset(); // COMMIT or ROLLBACK released it
}

/// The client left inside a transaction: roll it back, pool the
/// connection, free the slot.
void abandon_pin(self_ptr self) {
  auto& st = self->state;
  if (!st.pinned)
    return;
  auto& pin = *st.pinned;
  caf::anon_send(pin.lease.actor, atom::execute::value,
                 statement_request{"ROLLBACK", {}, 1, {}});
  if (!pin.cluster->give_back(pin.lease))
    caf::anon_send(pin.cluster->actor, atom::release::value, pin.lease, false);
  pin.cluster->release();
  st.node->stats->running_changed(pin.group, pin.cluster->name, -1);
  st.pinned.reset();
}


/// One page of the running statement into the session; true for more.
bool on_page(self_ptr self, statement_page& page) {
  auto& st = self->state;
  auto& s = *st.session;
  if (page.failed) {
    take_pin(self, page);
    st.statement = nullptr;
    auto code = page.error_sqlstate.empty() ? sqlstate_for(page.error_name)
                                            : page.error_sqlstate;
    s.fail({"ERROR", code, page.error_message, ""});
    pump(self);
    return false;
  }
  if (!st.columns_sent && (!page.columns.empty() || page.done)) {
    st.columns_sent = true;
    if (!s.columns(page.columns)) { // refused; the session answered
      self->send(st.statement, atom::cancel::value, false);
      st.statement = nullptr;
      pump(self);
      return false;
    }
  }
  if (page.rows.rows() > 0)
    s.rows(page.rows);
  if (!page.done && !s.wants_rows()) { // PortalSuspended: stop reading
    st.suspended = std::exchange(st.statement, nullptr);
    s.suspend();
    pump(self);
    return false;
  }
  if (page.done) {
    take_pin(self, page);
    st.statement = nullptr;
    s.complete(page.affected);
    pump(self);
    return false;
  }
  flush_output(self); // stream rows as they come
  return true;
}

void read_on(self_ptr self) {
  auto& st = self->state;
  pull_pages(self, st.statement,
             [self](statement_page& page) { return on_page(self, page); });
}

/// Ends a suspended run. Inside a transaction it holds the block's
/// connection, so it is read to its end to get that back; otherwise it is
/// cancelled.
void close_suspended(self_ptr self) {
  auto& st = self->state;
  if (!st.suspended)
    return;
  auto run = std::exchange(st.suspended, nullptr);
  using pgwire::transaction_step;
  if (st.step != transaction_step::begin && st.step != transaction_step::inside) {
    self->send(run, atom::cancel::value, false);
    return;
  }
  st.statement = run;
  pull_pages(self, run, [self](statement_page& page) {
    if (!page.failed && !page.done)
      return true;
    take_pin(self, page);
    self->state.statement = nullptr;
    pump(self);
    return false;
  });
}

void run(self_ptr self, std::string sql, engines::parameters values,
         pgwire::transaction_step step) {
  auto& st = self->state;
  using pgwire::transaction_step;
  st.step = step;
  const auto& params = st.session->startup_params();
  statement_spec spec;
  spec.ticket = st.node->next_ticket.fetch_add(1);
  spec.id = st.node->query_id(spec.ticket, "pg_");
  spec.sql = std::move(sql);
  spec.params = std::move(values);
  spec.keep_pinned = step == transaction_step::begin
                     || step == transaction_step::inside;
  if (step == transaction_step::inside || step == transaction_step::end)
    spec.pinned = st.pinned;
  spec.protocol = config::protocol::postgres_wire;
  spec.session.user = params.count("user") ? params.at("user") : "";
  spec.session.catalog = params.count("database") ? params.at("database") : "";
  spec.session.source = params.count("application_name")
                          ? params.at("application_name")
                          : "";
  for (const auto& [k, v] : params)
    spec.session.headers[k] = v; // the header router sees startup parameters
  st.statement = self->spawn(statement_actor, std::move(spec), st.node);
  st.columns_sent = false;
  read_on(self);
}

/// Startup and authentication passed: open for statements.
void admit_session(self_ptr self) {
  auto& st = self->state;
  st.node->wire_sessions->add(st.cancel_key, self);
  st.session->accept();
}

void handle(self_ptr self, pgwire::session_event& ev) {
  auto& st = self->state;
  if (std::holds_alternative<pgwire::startup_event>(ev)) {
    auto active = st.node->snapshot->load();
    if (!active || st.node->draining.load()) {
      st.session->reject({"FATAL", "57P03",
                          "the gateway is not accepting connections (no "
                          "active configuration, or shutting down)",
                          ""});
      return;
    }
    const auto& auth = active->config->auth;
    if (!auth.enabled) {
      admit_session(self);
      return;
    }
    if (!st.session->tls_active() && !auth.allow_cleartext_without_tls) {
      st.session->reject({"FATAL", "28000",
                          "password authentication requires TLS: connect "
                          "with sslmode=require",
                          ""});
      return;
    }
    st.session->request_password();
  } else if (auto* pw = std::get_if<pgwire::password_event>(&ev)) {
    auto active = st.node->snapshot->load();
    const auto& params = st.session->startup_params();
    auto user = params.count("user") ? params.at("user") : std::string{};
    bool ok = false;
    if (active) {
      auto i = active->config->auth.users.find(user);
      // Compared even for unknown users, so timing tells nothing.
      auto expected = i == active->config->auth.users.end() ? std::string{}
                                                            : i->second;
      ok = secrets_equal(pw->password, expected)
           && i != active->config->auth.users.end();
    }
    if (!ok) {
      st.node->stats->auth_failed("postgresWire");
      st.session->reject({"FATAL", "28P01",
                          "password authentication failed for user \""
                            + user + "\"",
                          ""});
      return;
    }
    admit_session(self);
  } else if (auto* run_ev = std::get_if<pgwire::run_event>(&ev)) {
    run(self, std::move(run_ev->sql), std::move(run_ev->params), run_ev->step);
  } else if (std::holds_alternative<pgwire::resume_event>(ev)) {
    st.statement = std::exchange(st.suspended, nullptr);
    if (st.statement)
      read_on(self);
    else // cannot happen: the session only resumes what it suspended
      st.session->fail({"ERROR", "XX000", "the suspended portal was lost", ""});
  } else if (std::holds_alternative<pgwire::close_run_event>(ev)) {
    close_suspended(self);
  } else if (std::holds_alternative<pgwire::tls_event>(ev)) {
    flush_output(self); // the 'S' goes out in the clear, then the handshake
    st.io.start_tls();
  } else if (auto* c = std::get_if<pgwire::cancel_event>(&ev)) {
    auto key = std::to_string(c->process_id) + ":"
               + std::to_string(c->secret_key);
    // A wrong secret simply names no session.
    if (auto target = st.node->wire_sessions->find(key))
      self->send(*target, atom::cancel::value, false);
  }
}

void pump(self_ptr self) {
  pump_events(self, [self](pgwire::session_event& ev) { handle(self, ev); });
}

} // namespace

caf::behavior pg_session(self_ptr self, std::shared_ptr<node_services> node,
                         wire_io io, int32_t process_id, int32_t secret_key,
                         bool tls_available) {
  auto& state = self->state;
  state.node = std::move(node);
  state.io = std::move(io);
  state.cancel_key = std::to_string(process_id) + ":"
                     + std::to_string(secret_key);
  pgwire::session_options opts;
  opts.process_id = process_id;
  opts.secret_key = secret_key;
  opts.tls_available = tls_available;
  state.session = std::make_unique<pgwire::server_session>(opts);
  self->attach_functor([node = state.node, key = state.cancel_key] {
    node->wire_sessions->remove(key);
  });
  self->set_exit_handler([self](caf::exit_msg& msg) {
    // The client went away: its statement is cancelled (rolling back an
    // open transaction), its slot freed.
    for (auto& run : {self->state.statement, self->state.suspended})
      if (run)
        self->send(run, atom::cancel::value, true);
    abandon_pin(self);
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
    [self](atom::cancel, bool) {
      if (self->state.statement)
        self->send(self->state.statement, atom::cancel::value, false);
    },
  };
}

} // namespace qf
