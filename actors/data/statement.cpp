// One statement from its arrival to its last page.
#include "actors/data/statement.hpp"

#include "actors/data/query_books.hpp"
#include "actors/data/statement_pages.hpp"

#include "protocols/common/json_writer.hpp"
#include "protocols/sql/statements.hpp"

#include <caf/all.hpp>

namespace qf {

namespace {

using self_ptr = caf::stateful_actor<statement_state>*;
using phase = statement_state::phase;
using clock = statement_state::clock;

trino::error_code trino_code(std::optional<errc> code) {
  if (!code)
    return trino::errors::generic_internal_error;
  switch (*code) {
    case errc::queue_full:
      return trino::errors::query_queue_full;
    case errc::queue_timeout:
      return trino::errors::exceeded_time_limit;
    case errc::cancelled:
      return trino::errors::user_canceled;
    case errc::group_disabled:
    case errc::engine_unavailable:
      return trino::errors::no_nodes_available;
    case errc::engine_syntax:
      return trino::errors::syntax_error;
    case errc::engine_user:
      return trino::errors::generic_user_error;
    default:
      return trino::errors::generic_internal_error;
  }
}

std::string status_of(const trino::error_code& code) {
  if (code.code == trino::errors::permission_denied.code)
    return "Denied";
  if (code.code == trino::errors::user_canceled.code
      || code.code == trino::errors::abandoned_query.code)
    return "Cancelled";
  return "Failed";
}

void record(self_ptr self, const std::string& status) {
  auto& st = self->state;
  const auto& s = st.spec.session;
  statement_facts f;
  f.id = st.spec.id;
  f.user = s.user;
  f.source = s.source;
  f.catalog = s.catalog;
  f.schema = s.schema;
  f.protocol = std::string{config::to_string(st.spec.protocol)};
  f.sql = st.spec.sql;
  f.status = status;
  f.error = st.error ? st.error->message : "";
  f.group = st.route.group;
  f.routing_trace = routing::trace_to_json(st.route);
  f.cluster = st.cluster.get();
  f.created = st.created;
  f.created_wall_ms = st.created_wall_ms;
  if (st.admitted != clock::time_point{})
    f.admitted = st.admitted;
  if (st.started != clock::time_point{})
    f.started = st.started;
  f.ended = st.ended;
  f.started_wall_ms = st.started_wall_ms;
  f.finished_wall_ms = st.finished_wall_ms;
  f.rows = st.rows;
  f.backend_query_id = st.backend_query_id;
  if (st.cluster && !f.backend_query_id.empty())
    if (auto active = st.node->snapshot->load())
      for (const auto& c : active->config->clusters)
        if (c.name == st.cluster->name)
          f.external_url = c.external_url;
  if (status == "Success" && st.spec.protocol == config::protocol::trino_http
      && !st.final_served) {
    auto seconds = std::chrono::duration<double>(f.ended - f.created).count();
    *st.pending = statement_state::pending_record{make_record(std::move(f)), seconds, st.series};
    return;
  }
  file_record(*st.node, std::move(f), st.series.get());
}

/// Files a Trino query's record that waited for its last page; as
/// abandoned when that page never went out.
void file_pending(const node_services& node, std::optional<statement_state::pending_record>& p,
                  bool abandoned) {
  if (!p)
    return;
  auto pending = std::move(*p);
  p.reset();
  if (abandoned) {
    pending.record.status = "Cancelled";
    pending.record.error_message = "Query abandoned: the client did not fetch its results";
  }
  node.record_finished(std::move(pending.record), pending.seconds, pending.series.get());
}

void release_slot(self_ptr self) {
  auto& st = self->state;
  if (!st.holds_slot)
    return;
  st.holds_slot = false;
  give_back_slot(*st.node->stats, *st.series, *st.cluster);
}

/// Gives the connection back once no request to it is outstanding: to the
/// session when a transaction goes on, else to the pool.
void return_connection(self_ptr self) {
  auto& st = self->state;
  if (!st.lease || st.conn_busy)
    return;
  if (st.ph == phase::failed && !st.exhausted && !st.rollback_on_return)
    // Cancelled with rows unread: the cursor cancels and drains its
    // statement now, not when the connection's next statement comes.
    self->send(st.lease->actor, atom::close::value);
  if (st.spec.keep_pinned && !st.rollback_on_return) {
    st.handover = pinned_connection{st.cluster, std::move(*st.lease), st.route.group,
                                    st.series};
    st.lease.reset();
    st.holds_slot = false; // the slot travels with the connection
    return;
  }
  if (st.rollback_on_return) // the connection actor runs it before the next
    caf::anon_send(st.lease->actor, atom::execute::value,
                   statement_request{"ROLLBACK", {}, 1, {}});
  if (!st.cluster->give_back(*st.lease))
    self->send(st.cluster->actor, atom::release::value, std::move(*st.lease),
               false);
  st.lease.reset();
  if (st.rollback_on_return)
    self->quit(); // its session is gone; nothing more to serve
}

void answer_if_ready(self_ptr self, bool deadline_passed);
void fetch_more(self_ptr self);

void fail(self_ptr self, trino::error_code code, std::string message) {
  auto& st = self->state;
  if (st.ph == phase::finished || st.ph == phase::failed)
    return;
  st.ph = phase::failed;
  st.ended = clock::now();
  st.live->ended = true;
  st.finished_wall_ms = wall_ms(); // before the slot goes to another
  st.error = trino::query_error{std::move(message), code};
  st.buffer.clear();
  st.buffered_rows = 0;
  return_connection(self);
  release_slot(self);
  record(self, status_of(code));
  answer_if_ready(self, false);
}

void fail(self_ptr self, const caf::error& err) {
  self->state.sqlstate = sqlstate_of(err);
  self->state.vendor_code = vendor_code_of(err);
  fail(self, trino_code(code_of(err)), message_of(err));
}

void finish(self_ptr self) {
  auto& st = self->state;
  st.ph = phase::finished;
  st.ended = clock::now();
  st.live->ended = true;
  st.finished_wall_ms = wall_ms(); // before the slot goes to another
  return_connection(self);
  release_slot(self);
  record(self, "Success");
}

/// Takes a batch from the connection; the query ends after the last one.
void accept_batch(self_ptr self, result_batch& b) {
  auto& st = self->state;
  for (auto& notice : b.notices)
    if (st.notices.size() < engines::max_notices_per_statement)
      st.notices.push_back(std::move(notice));
  auto n = b.rows.rows();
  st.rows += static_cast<int64_t>(n);
  if (n > 0) {
    st.buffered_rows += n;
    st.buffer.push_back(std::move(b.rows));
  }
  if (b.more)
    fetch_more(self);
  else {
    st.affected = b.affected;
    st.exhausted = true;
    finish(self);
  }
  answer_if_ready(self, false);
}

/// A late answer from the connection after a cancel: give it back (which
/// closes its cursor).
bool abandoned_result(self_ptr self) {
  auto& st = self->state;
  if (st.ph == phase::running)
    return false;
  return_connection(self);
  answer_if_ready(self, false); // a transaction's page waited for this
  return true;
}

void fetch_more(self_ptr self) {
  auto& state = self->state;
  if (state.ph != phase::running || state.exhausted || state.fetching
      || state.buffered_rows >= 2 * state.node->trino.max_page_rows)
    return;
  state.fetching = state.conn_busy = true;
  self
    ->request(state.lease->actor, caf::infinite, atom::fetch::value,
              state.node->trino.max_page_rows)
    .then(
      [self](result_batch& b) {
        auto& st = self->state;
        st.fetching = st.conn_busy = false;
        if (!abandoned_result(self))
          accept_batch(self, b);
      },
      [self](caf::error& err) {
        auto& st = self->state;
        st.fetching = st.conn_busy = false;
        return_connection(self);
        fail(self, err);
      });
}

/// What engines that take the client's session along (Trino) are told;
/// only they get it, so that other statements copy no headers.
engines::session_context session_of(const statement_spec& spec) {
  engines::session_context out;
  out.user = spec.session.user;
  for (const auto& [name, value] : spec.session.headers)
    if (name.rfind("x-trino-", 0) == 0 && name != "x-trino-user")
      out.headers.emplace_back(name, value);
  return out;
}

void execute(self_ptr self) {
  auto& state = self->state;
  state.ph = phase::running;
  state.spec.summary->update({state.route.group, state.cluster->name, "RUNNING"});
  state.started = clock::now();
  state.started_wall_ms = wall_ms();
  state.conn_busy = state.fetching = true;
  self
    ->request(state.lease->actor, caf::infinite, atom::execute::value,
              statement_request{state.spec.sql, state.spec.params,
                                state.node->trino.max_page_rows,
                                state.cluster->engine_type == "trino" ? session_of(state.spec)
                                                                      : engines::session_context{}})
    .then(
      [self](statement_result& r) {
        auto& st = self->state;
        st.conn_busy = st.fetching = false;
        if (abandoned_result(self))
          return;
        st.columns = std::move(r.columns);
        st.have_columns = true;
        st.backend_query_id = std::move(r.backend_query_id);
        accept_batch(self, r.first);
      },
      [self](caf::error& err) {
        auto& st = self->state;
        st.conn_busy = st.fetching = false;
        return_connection(self);
        fail(self, err);
      });
}

/// admit_only: the slot goes to the wire session, which runs and records
/// the statement on its fast lane; this actor is done.
void hand_over_slot(self_ptr self, std::shared_ptr<cluster_state> cluster) {
  auto& st = self->state;
  st.ph = phase::finished;
  st.final_served = true;
  statement_page page;
  page.done = true;
  page.admitted = std::move(cluster);
  st.spec.page_sink(std::move(page));
  if (st.in_flight->exchange(false))
    st.node->in_flight.fetch_sub(1);
  self->quit();
}

void admitted(self_ptr self, admission& a) {
  auto& state = self->state;
  if (state.ph != phase::queued) { // cancelled while the grant was under way
    a.cluster->release(); // never counted as running: nothing else to undo
    return;
  }
  if (state.spec.admit_only)
    return hand_over_slot(self, std::move(a.cluster));
  state.cluster = std::move(a.cluster);
  state.holds_slot = true;
  state.admitted = clock::now();
  state.series = state.node->stats->series(state.route.group, state.cluster->name,
                                           state.cluster->engine_type,
                                           std::string{config::to_string(state.spec.protocol)});
  slot_taken(*state.node->stats, *state.series);
  if (auto idle = state.cluster->take_idle()) {
    state.lease = std::move(*idle);
    execute(self);
    return;
  }
  self->request(state.cluster->actor, caf::infinite, atom::acquire::value)
    .then(
      [self](conn_lease& lease) {
        auto& st = self->state;
        st.lease = std::move(lease);
        if (st.ph != phase::queued) {
          return_connection(self);
          return;
        }
        execute(self);
      },
      [self](caf::error& err) { fail(self, err); });
}

void start(self_ptr self) {
  auto& st = self->state;
  if (st.spec.pinned) { // inside a transaction: its connection and slot
    auto& pin = *st.spec.pinned;
    st.cluster = pin.cluster;
    st.lease = pin.lease;
    st.route.group = pin.group;
    st.series = pin.series;
    st.holds_slot = true;
    st.admitted = clock::now();
    execute(self);
    return;
  }
  auto snapshot = st.node->snapshot->load();
  if (!snapshot) { // withdrawn meanwhile: databaseCache expired
    fail(self, trino::errors::server_starting_up,
         "the gateway has no configuration: its configuration database has not answered "
         "within databaseCache.expireAfterWrite");
    return;
  }
  const auto& s = st.spec.session;
  routing::route_request req{st.spec.protocol, s.user, s.headers,
                             s.tags, st.spec.sql};
  st.route = snapshot->routes->route(req);
  st.spec.summary->update({st.route.group, "", "QUEUED"});
  if (st.route.denied) {
    fail(self, trino::errors::permission_denied, st.route.deny_message);
    return;
  }
  auto g = snapshot->groups.find(st.route.group);
  if (g == snapshot->groups.end()) {
    fail(self, trino::errors::generic_internal_error,
         "cluster group \"" + st.route.group + "\" does not exist");
    return;
  }
  st.group = g->second;
  auto on_admitted = [self](admission& a) { admitted(self, a); };
  auto on_error = [self](caf::error& err) { fail(self, err); };
  self->request(st.group, caf::infinite, atom::admit::value, st.spec.ticket,
                st.spec.only_cluster, st.spec.session.user)
    .then(on_admitted, on_error);
}

void serve(self_ptr self) {
  auto& st = self->state;
  auto poll = std::move(*st.waiting);
  st.waiting.reset();
  auto page_rows = take_rows(st, st.node->trino.max_page_rows);
  bool final = st.ph == phase::failed
               || (st.ph == phase::finished && st.buffered_rows == 0);
  trino::results_page page;
  page.id = st.spec.id;
  page.info_uri = uri(st, "/v1/query/");
  if (!final)
    page.next_uri = uri(st, st.ph == phase::queued ? "/v1/statement/queued/"
                                                   : "/v1/statement/executing/")
                    + "/" + st.spec.slug + "/" + std::to_string(poll.token + 1);
  if (st.have_columns && st.ph != phase::failed) {
    page.columns = &st.columns;
    page.rows = &page_rows;
    page.row_count = page_rows.rows();
  }
  page.stats.state = public_state(st, final);
  auto now = clock::now();
  page.stats.queued_ms = ms_between(
    st.created, st.admitted != clock::time_point{} ? st.admitted : now);
  page.stats.elapsed_ms = ms_between(st.created, now);
  page.stats.processed_rows = st.rows;
  page.error = st.error;
  for (auto& n : std::exchange(st.notices, {}))
    if (st.warnings.size() < engines::max_notices_per_statement)
      st.warnings.push_back({std::move(n.severity), std::move(n.message)});
  page.warnings = &st.warnings;
  st.served_token = poll.token;
  st.served_page = trino::encode(page);
  st.live->waiting_since_ms = 0;
  // The client's silence counts from this answer, not from its poll: a poll
  // held for poll_wait is no idleness of the client's.
  st.live->last_activity_ms = steady_ms();
  if (final) {
    st.final_served = true;
    st.live->finished = true;
    file_pending(*st.node, *st.pending, false); // before the client can look
  }
  poll.respond({200, st.served_page});
  // Counted off only once the answer is handed over: a drain that sees
  // nothing in flight then waits for the answers not yet sent.
  if (final && st.in_flight->exchange(false))
    st.node->in_flight.fetch_sub(1);
  fetch_more(self); // the buffer has room again
}

/// Hands a wire session what there is: rows, or the end, or the error.
void deliver_fetch(self_ptr self) {
  auto& st = self->state;
  statement_page page;
  page.rows = take_rows(st, st.fetch_max);
  page.failed = st.ph == phase::failed;
  page.done = page.failed || (st.ph == phase::finished && st.buffered_rows == 0);
  if (st.have_columns && !page.failed)
    page.columns = st.columns;
  if (st.error) {
    page.error_message = st.error->message;
    page.error_name = st.error->code.name;
    page.error_sqlstate = st.sqlstate;
    page.error_vendor_code = st.vendor_code;
  }
  page.affected = st.affected;
  page.notices = std::exchange(st.notices, {});
  if (page.done)
    page.pinned = std::move(st.handover);
  bool done = page.done;
  if (std::exchange(st.pull_waiting, false)) {
    st.spec.page_sink(std::move(page));
  } else {
    auto promise = std::move(*st.fetch_waiting);
    st.fetch_waiting.reset();
    promise.deliver(std::move(page));
  }
  if (done) {
    st.final_served = true;
    if (st.in_flight->exchange(false))
      st.node->in_flight.fetch_sub(1);
    self->quit();
    return;
  }
  fetch_more(self);
}

void answer_if_ready(self_ptr self, bool deadline_passed) {
  auto& st = self->state;
  if (st.fetch_waiting || st.pull_waiting) {
    bool done = st.ph == phase::failed || st.ph == phase::finished;
    // A transaction's last page carries its connection: wait for it.
    bool connection_pending = done && st.spec.keep_pinned && st.lease;
    if ((st.buffered_rows > 0 || done) && !connection_pending)
      deliver_fetch(self);
    return;
  }
  if (!st.waiting)
    return;
  bool page_full = st.buffered_rows >= st.node->trino.max_page_rows;
  bool done = st.ph == phase::failed || st.ph == phase::finished;
  if (deadline_passed || page_full || done)
    serve(self);
}

void cancel(self_ptr self, bool abandoned) {
  auto& st = self->state;
  if (st.ph == phase::queued && st.group)
    self->send(st.group, atom::withdraw::value, st.spec.ticket);
  if (st.ph == phase::running && st.lease)
    st.lease->engine->interrupt();
  if (abandoned)
    fail(self, trino::errors::abandoned_query,
         "Query abandoned: the client stopped polling for results");
  else
    fail(self, trino::errors::user_canceled, "Query was canceled");
}

} // namespace

caf::actor spawn_statement(const std::shared_ptr<node_services>& node, statement_spec spec) {
  node->in_flight.fetch_add(1);
  return node->sys->spawn(statement_actor, std::move(spec), node);
}

caf::behavior statement_actor(self_ptr self, statement_spec spec,
                          std::shared_ptr<node_services> node) {
  auto& state = self->state;
  state.spec = std::move(spec);
  state.node = std::move(node);
  state.created_wall_ms = wall_ms(); // in_flight counted it already (spawn_statement)
  auto& s = state.spec;
  if (!s.summary)
    s.summary = std::make_shared<query_summary>(
      s.id, s.session.user, std::string{config::to_string(s.protocol)},
      std::string{sql::preview(s.sql, 160)});
  if (s.protocol != config::protocol::trino_http)
    state.node->wire_statements->add(s.id, self, nullptr, s.summary);
  self->attach_functor([node = state.node, id = state.spec.id,
                        counted = state.in_flight, pending = state.pending] {
    file_pending(*node, *pending, true);
    node->queries->remove(id);
    node->wire_statements->remove(id);
    if (counted->exchange(false))
      node->in_flight.fetch_sub(1);
  });
  if (state.spec.protocol == config::protocol::trino_http) // wire sessions never poll
    state.served_page = trino_submitted_page(state.spec.base_address, state.spec.id,
                                             state.spec.slug);
  state.live = state.spec.live ? state.spec.live
                               : std::make_shared<query_liveness>();
  start(self);
  return {
    [self](atom::poll, uint64_t token, trino_respond& respond) {
      auto& st = self->state;
      st.live->last_activity_ms = steady_ms();
      if (token == st.served_token) {
        respond({200, st.served_page}); // a retry: same page again
        return;
      }
      if (token != st.served_token + 1) {
        respond({404, "{\"error\":\"unknown page token\"}"});
        return;
      }
      if (st.waiting)
        st.waiting->respond({409, "{\"error\":\"superseded by a newer poll\"}"});
      st.waiting = statement_state::waiting_poll{token, std::move(respond)};
      answer_if_ready(self, false);
      if (st.waiting) // no page yet: the reaper calls time on it
        st.live->waiting_since_ms = steady_ms();
    },
    [self](atom::deadline) { answer_if_ready(self, true); },
    [self](atom::cancel, bool abandoned) {
      auto& st = self->state;
      if (abandoned && st.spec.keep_pinned) {
        // The session is gone: end its transaction and free everything.
        st.rollback_on_return = true;
        if (st.ph == phase::finished || st.ph == phase::failed)
          return; // the handover already happened; the session cleans up
      }
      cancel(self, abandoned);
      if (abandoned && !st.lease) // else the running statement ends first
        self->quit(); // nobody will fetch the error
    },
    [self](atom::fetch, uint32_t max_rows) {
      auto& st = self->state;
      st.fetch_waiting = self->make_response_promise();
      st.fetch_max = std::max<uint32_t>(max_rows, 1);
      answer_if_ready(self, false);
    },
    [self](atom::pull, uint32_t max_rows) {
      auto& st = self->state;
      st.pull_waiting = static_cast<bool>(st.spec.page_sink);
      st.fetch_max = std::max<uint32_t>(max_rows, 1);
      answer_if_ready(self, false);
    },
    [self](atom::info, trino_respond& respond) {
      respond({200, query_info(self->state)});
    },
  };
}

} // namespace qf
