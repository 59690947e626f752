// The base of the actor unit tests: an actor system on CAF's deterministic
// scheduler (no threads; time is virtual and moves only when a test moves
// it), and a request whose answer a test reads once the scheduler ran.
#pragma once

#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <gtest/gtest.h>

#include <memory>
#include <optional>

namespace qf {

class deterministic_test : public ::testing::Test {
protected:
  deterministic_test()
    : sys(init(cfg)),
      sched(dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler())) {
    // nop
  }

  deterministic_test(const deterministic_test&) = delete;
  deterministic_test& operator=(const deterministic_test&) = delete;

  /// What a request got: nothing yet, its answer or its error.
  template <class Answer>
  using reply = std::shared_ptr<std::optional<caf::expected<Answer>>>;

  /// Sends `xs...` to `to` as a request and runs the scheduler: the reply
  /// is filled in if `to` answered by then, else when it does.
  template <class Answer, class Handle, class... Ts>
  reply<Answer> request(Handle to, Ts... xs) {
    auto out = std::make_shared<std::optional<caf::expected<Answer>>>();
    sys.spawn([out, to, xs...](caf::event_based_actor* self) {
      self->request(to, caf::infinite, xs...)
        .then([out](Answer& a) { *out = std::move(a); },
              [out](caf::error& e) { *out = caf::expected<Answer>{std::move(e)}; });
    });
    sched.run();
    return out;
  }

  caf::actor_system_config cfg;
  caf::actor_system sys;
  caf::scheduler::test_coordinator& sched;

private:
  static caf::actor_system_config& init(caf::actor_system_config& c) {
    c.set("scheduler.policy", caf::atom("testing"));
    return c;
  }
};

} // namespace qf
