// The waiting part of wire_session_base (net/boundary/wire_session_base.hpp):
// a fast-lane statement that finds its group full waits in the group
// gate's lane, handed a slot on the thread that frees one, or, when
// statements of the actor path wait already, in the group actor's queue
// through an admission-only statement actor; either way it starts on the
// fast lane once admitted (take_admission), or fails as an actor-path wait
// fails. Included by wire_session_base.hpp only.
#pragma once

namespace qf {

template <class Derived, class Backend>
void wire_session_base<Derived, Backend>::wait_for_slot(std::string text,
                                                        engines::parameters params,
                                                        routing::decision route,
                                                        std::string only_cluster,
                                                        const std::shared_ptr<group_gate>& gate) {
  if (wait_in_lane(text, params, route, only_cluster, gate))
    return;
  wait_on_actors(std::move(text), std::move(params), std::move(route), std::move(only_cluster));
}

template <class Derived, class Backend>
void wire_session_base<Derived, Backend>::wait_on_actors(std::string text,
                                                         engines::parameters params,
                                                         routing::decision route,
                                                         std::string only_cluster) {
  auto spec = self().actor_statement(text, params);
  spec.admit_only = true;
  spec.only_cluster = std::move(only_cluster);
  spec.pinned.reset();
  spec.keep_pinned = false;
  waiting_.emplace(queued_statement{spec.id, std::move(text), std::move(params), std::move(route),
                                    io::round_clock::steady(), io::round_clock::wall_ms()});
  start_on_actors(std::move(spec));
}

template <class Derived, class Backend>
bool wire_session_base<Derived, Backend>::take_admission(statement_page& page) {
  if (!waiting_)
    return false;
  auto queued = std::move(*waiting_);
  waiting_.reset();
  if (!page.admitted)
    return false;
  statement_ = nullptr;
  begin_fast(std::move(queued.sql), std::move(queued.params), std::move(queued.route),
             std::move(page.admitted), &queued);
  return true;
}

template <class Derived, class Backend>
bool wire_session_base<Derived, Backend>::wait_in_lane(std::string& text,
                                                       engines::parameters& params,
                                                       routing::decision& route,
                                                       const std::string& only_cluster,
                                                       const std::shared_ptr<group_gate>& gate) {
  auto ticket = node_->next_ticket.fetch_add(1);
  auto id = node_->query_id(ticket, id_prefix_);
  group_gate::lane_waiter w;
  w.ticket = ticket;
  w.only = only_cluster;
  w.user = route_req_.user;
  w.admit = [weak = weak_self(), loop = conn_->loop().shared_from_this(),
             ticket](std::shared_ptr<cluster_state> slot) {
    loop->post([weak, ticket, slot = std::move(slot)]() mutable {
      auto self = weak.lock();
      if (self && !self->closed_ && self->lane_ && self->lane_->ticket == ticket)
        return self->lane_ended(std::move(slot));
      if (slot) // its wait ended meanwhile (and was recorded): nobody takes it
        slot->release();
    });
  };
  lane_.emplace(lane_wait{ticket, gate, only_cluster, {}});
  waiting_.emplace(queued_statement{
      id, {}, {}, {}, io::round_clock::steady(), io::round_clock::wall_ms(), true});
  if (!gate->wait_in_lane(w)) {
    lane_.reset();
    waiting_.reset();
    return false;
  }
  // Taken only now: until here the caller may still run it elsewhere.
  waiting_->sql = std::move(text);
  waiting_->params = std::move(params);
  waiting_->route = std::move(route);
  node_->in_flight.fetch_add(1); // as a statement actor's, for a drain
  books_->waiting(id, waiting_->sql, waiting_->route.group);
  auto timeout =
      std::chrono::duration_cast<std::chrono::milliseconds>(gate->cfg().capacity_wait_timeout);
  lane_->timer = conn_->loop().after(timeout, [weak = weak_self()] {
    if (auto self = weak.lock(); self && self->lane_) {
      self->lane_->timer.reset();
      self->leave_lane("Failed", trino::errors::exceeded_time_limit,
                       queue_timeout_message(self->lane_->gate->cfg().name,
                                             self->lane_->gate->cfg().capacity_wait_timeout));
    }
  });
  return true;
}

template <class Derived, class Backend>
void wire_session_base<Derived, Backend>::lane_ended(std::shared_ptr<cluster_state> slot) {
  auto only = lane_->only_cluster;
  stop_lane_timer();
  lane_.reset();
  // begin_fast (or the statement actor) counts it in flight again: only
  // then does the lane's count go, so that a drain never sees it at 0.
  if (!slot) {
    auto queued = std::move(*waiting_);
    waiting_.reset();
    books_->summary()->end();
    wait_on_actors(std::move(queued.sql), std::move(queued.params), std::move(queued.route),
                   std::move(only));
  } else {
    statement_page page;
    page.admitted = std::move(slot);
    self().on_page(page);
  }
  node_->in_flight.fetch_sub(1);
}

template <class Derived, class Backend>
void wire_session_base<Derived, Backend>::leave_lane(const char* status,
                                                     const trino::error_code& code,
                                                     std::string message) {
  if (!lane_ || !lane_->gate->leave_lane(lane_->ticket))
    return;
  stop_lane_timer();
  lane_.reset();
  auto queued = std::move(*waiting_);
  books_->never_admitted(queued.id, queued.sql, queued.route, queued.since, queued.since_wall_ms,
                         status, message);
  node_->in_flight.fetch_sub(1);
  statement_page page;
  page.failed = true;
  page.error_message = std::move(message);
  page.error_name = std::string{code.name};
  self().on_page(page); // take_admission ends the wait
}

template <class Derived, class Backend>
void wire_session_base<Derived, Backend>::stop_lane_timer() {
  if (lane_ && lane_->timer)
    conn_->loop().cancel(*lane_->timer);
  if (lane_)
    lane_->timer.reset();
}

} // namespace qf
