// The boundary's one way to ask an actor: a short-lived actor sends the
// request with a timeout and hands the answer (or the error) to a callback,
// so that no IO thread ever waits on an actor (STYLE.md §8).
#pragma once

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>

namespace qf::boundary {

template <class Handle, class OnReply, class OnError, class... Ts>
void ask(caf::actor_system& sys, const Handle& dest, caf::timespan timeout, OnReply on_reply,
         OnError on_error, Ts... xs) {
  sys.spawn([=](caf::event_based_actor* self) {
    self->request(dest, timeout, xs...).then(on_reply, on_error);
  });
}

} // namespace qf::boundary
