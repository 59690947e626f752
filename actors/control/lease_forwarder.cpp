#include "actors/control/lease_forwarder.hpp"

#include <caf/all.hpp>

namespace qf {

namespace {

using namespace std::chrono_literals;
using self_ptr = lease_forwarder_actor::stateful_pointer<lease_forwarder_state>;
using worker_api::lease_verb;
using answer_result = caf::result<worker_api::acquire_answer>;

answer_result forward(self_ptr self, lease_verb verb, const worker_api::lease_call& c) {
  auto& st = self->state;
  if (st.owner_url.empty())
    return make_error(errc::lease_owner_unavailable,
                      "no control-plane replica owns the leases at the moment: try again");
  auto id = st.next_id++;
  auto promise = self->make_response_promise<worker_api::acquire_answer>();
  st.calls.emplace(id, lease_forwarder_state::pending{verb, promise});
  http_call call;
  call.method = "POST";
  call.url = st.owner_url + "/worker/capacity/" + std::string{to_string(verb)};
  call.headers = {{"Authorization", "Bearer " + st.cfg.shared_secret},
                  {"Content-Type", "application/json"}};
  call.body = worker_api::encode(verb, c);
  call.timeout = 5s + std::chrono::milliseconds(c.wait_ms);
  send_for<lease_forwarder_actor>(*st.cfg.transport, std::move(call), self, atom::leased::value,
                                  id);
  return promise;
}

/// The owner's refusal as the error this replica's boundary turns back
/// into the same status and code.
caf::error refused(const http_outcome& o) {
  auto r = worker_api::decode_refusal(o.body);
  auto message = r.message.empty() ? o.describe() : r.message;
  if (r.code == "unknownSession")
    return make_error(errc::unknown_session, message);
  if (r.code == "notHeld")
    return make_error(errc::lease_not_held, message);
  if (r.code == "staleCall")
    return make_error(errc::stale_lease_call, message);
  if (r.code == "unknownName")
    return make_error(errc::bad_lease, message);
  return make_error(errc::lease_owner_unavailable,
                    "the replica that owns the leases answered: " + o.describe());
}

/// The owner's answer to a forwarded call, delivered as this replica's:
/// decoded, its refusal with its code, or unavailable.
template <class Promise, class Decode>
void deliver(Promise& promise, http_outcome& o, Decode decode, const char* what) {
  if (o.status == 200) {
    if (auto a = decode(o.body))
      promise.deliver(std::move(*a));
    else
      promise.deliver(make_error(errc::lease_owner_unavailable,
                                 "the lease owner's answer is not one: " + o.body.substr(0, 200)));
    return;
  }
  if (o.status >= 400 && o.status < 500 && o.status != 429) {
    promise.deliver(refused(o));
    return;
  }
  promise.deliver(make_error(errc::lease_owner_unavailable,
                             std::string{"the replica that owns the "} + what
                               + " did not answer: " + o.describe()));
}

void answered(self_ptr self, uint64_t id, http_outcome& o) {
  auto& st = self->state;
  auto i = st.calls.find(id);
  if (i == st.calls.end())
    return;
  auto p = std::move(i->second);
  st.calls.erase(i);
  deliver(
    p.promise, o,
    [verb = p.verb](std::string_view body) { return worker_api::decode_lease_answer(verb, body); },
    "leases");
}

caf::result<worker_api::sweep_answer> forward_sweep(self_ptr self, worker_api::sweep_verb verb,
                                                    const worker_api::sweep_call& c) {
  auto& st = self->state;
  if (st.owner_url.empty())
    return make_error(errc::lease_owner_unavailable,
                      "no control-plane replica owns the sweep locks at the moment: try again");
  auto id = st.next_id++;
  auto promise = self->make_response_promise<worker_api::sweep_answer>();
  st.sweeps.emplace(id, lease_forwarder_state::pending_sweep{verb, promise});
  send_for<lease_forwarder_actor>(*st.cfg.transport,
                                  sweep_lock_call(st.owner_url, st.cfg.shared_secret, verb, c),
                                  self, atom::swept::value, id);
  return promise;
}

void swept(self_ptr self, uint64_t id, http_outcome& o) {
  auto& st = self->state;
  auto i = st.sweeps.find(id);
  if (i == st.sweeps.end())
    return;
  auto p = std::move(i->second);
  st.sweeps.erase(i);
  deliver(
    p.promise, o,
    [verb = p.verb](std::string_view body) { return worker_api::decode_sweep_answer(verb, body); },
    "sweep locks");
}

} // namespace

http_call sweep_lock_call(const std::string& base_url, const std::string& shared_secret,
                          worker_api::sweep_verb verb, const worker_api::sweep_call& c) {
  http_call call;
  call.url = base_url + "/worker/sweep-lock/" + std::string{to_string(verb)};
  call.headers = {{"Authorization", "Bearer " + shared_secret}};
  if (verb == worker_api::sweep_verb::counts) {
    call.method = "GET";
    call.url += "?name=" + c.name;
  } else {
    call.method = "POST";
    call.headers.emplace_back("Content-Type", "application/json");
    call.body = worker_api::encode(verb, c);
  }
  call.timeout = 5s;
  return call;
}

lease_forwarder_actor::behavior_type
lease_forwarder(lease_forwarder_actor::stateful_pointer<lease_forwarder_state> self,
                lease_forwarder_settings cfg) {
  self->state.cfg = std::move(cfg);
  return {
    [self](atom::acquire, const worker_api::lease_call& c) -> answer_result {
      return forward(self, lease_verb::acquire, c);
    },
    [self](atom::release, const worker_api::lease_call& c) -> answer_result {
      return forward(self, lease_verb::release, c);
    },
    [self](atom::renew, const worker_api::lease_call& c) -> answer_result {
      return forward(self, lease_verb::renew, c);
    },
    [self](atom::sweep_lock, worker_api::sweep_verb verb, const worker_api::sweep_call& c)
      -> caf::result<worker_api::sweep_answer> { return forward_sweep(self, verb, c); },
    [self](atom::follow, const std::string& url) {
      auto& st = self->state;
      if (url == st.owner_url)
        return;
      st.owner_url = url;
      // Calls on their way to the last owner may never be answered (it is
      // gone, or it lost the lock): their workers try again, here.
      for (auto& [id, p] : st.calls)
        p.promise.deliver(make_error(errc::lease_owner_unavailable,
                                     "the replica owning the leases changed: try again"));
      st.calls.clear();
      for (auto& [id, p] : st.sweeps)
        p.promise.deliver(make_error(errc::lease_owner_unavailable,
                                     "the replica owning the sweep locks changed: try again"));
      st.sweeps.clear();
    },
    [self](atom::leased, uint64_t id, http_outcome& o) { answered(self, id, o); },
    [self](atom::swept, uint64_t id, http_outcome& o) { swept(self, id, o); },
  };
}

} // namespace qf
