// The lease forwarder on CAF's deterministic scheduler, its HTTP calls
// answered by hand: a follower replica passes a worker's call on to the
// owner with the fleet's secret and hands back the owner's answer, its
// refusals with their codes, and "unavailable, try again" (the 503 a
// worker retries) when no owner is known, the owner does not answer, or
// answers with something that is not an answer; calls on their way to an
// owner that was replaced are answered at once, their late answers dropped.
#include "actors/control/lease_forwarder.hpp"
#include "tests/unit/actors/deterministic_test.hpp"
#include "tests/unit/actors/scripted_transport.hpp"

#include <caf/all.hpp>
#include <gtest/gtest.h>

using namespace qf;
using namespace std::chrono_literals;
using worker_api::acquire_answer;
using worker_api::lease_call;
using worker_api::lease_verb;
using worker_api::sweep_answer;
using worker_api::sweep_call;
using worker_api::sweep_verb;

namespace {

class lease_forwarder_test : public deterministic_test {
protected:
  lease_forwarder_test() {
    forwarder = sys.spawn(lease_forwarder, lease_forwarder_settings{transport, "fleet-secret"});
    sched.run();
  }

  ~lease_forwarder_test() override {
    caf::anon_send_exit(forwarder, caf::exit_reason::user_shutdown);
    sched.run();
  }

  void follow(std::string url) {
    caf::anon_send(forwarder, atom::follow::value, std::move(url));
    sched.run();
  }

  /// The forwarder's answer or error, filled in once it came.
  template <class Answer, class... Ts>
  reply<Answer> ask(Ts... xs) {
    return request<Answer>(forwarder, std::move(xs)...);
  }

  reply<acquire_answer> acquire(uint64_t seq = 1) {
    return ask<acquire_answer>(atom::acquire::value, call(seq));
  }

  static lease_call call(uint64_t seq) {
    lease_call c;
    c.worker = "w1";
    c.incarnation = "i1";
    c.seq = seq;
    c.wait_ms = 250;
    c.items.push_back({"pg", "g", 2});
    return c;
  }

  /// The owner answers the first call waiting for `part`.
  void owner_answers(const std::string& part, int status, std::string body = {}) {
    ASSERT_TRUE(transport->answer(part, status, std::move(body))) << "no call to " << part;
    sched.run();
  }

  template <class Answer>
  static std::optional<errc> code(const reply<Answer>& r) {
    if (!*r || **r)
      return std::nullopt;
    return code_of((*r)->error());
  }

  std::shared_ptr<scripted_transport> transport = std::make_shared<scripted_transport>();
  lease_forwarder_actor forwarder;
};

} // namespace

TEST_F(lease_forwarder_test, with_no_owner_known_a_call_is_told_to_try_again_and_nothing_is_sent) {
  auto r = acquire();
  EXPECT_EQ(code(r), errc::lease_owner_unavailable);
  auto s = ask<sweep_answer>(atom::sweep_lock::value, sweep_verb::acquire,
                             sweep_call{"engine-reconcile", "w1", 0, 30, {}});
  EXPECT_EQ(code(s), errc::lease_owner_unavailable);
  EXPECT_TRUE(transport->calls.empty());
}

TEST_F(lease_forwarder_test, a_call_goes_to_the_owner_with_the_fleet_secret_and_its_answer_comes_back) {
  follow("https://owner:9000");
  auto r = acquire();
  ASSERT_FALSE(*r); // on its way
  ASSERT_EQ(transport->calls.size(), 1u);
  const auto& sent = transport->calls.front().call;
  EXPECT_EQ(sent.method, "POST");
  EXPECT_EQ(sent.url, "https://owner:9000/worker/capacity/acquire");
  EXPECT_EQ(sent.body, worker_api::encode(lease_verb::acquire, call(1)));
  EXPECT_NE(std::find(sent.headers.begin(), sent.headers.end(),
                      std::pair<std::string, std::string>{"Authorization", "Bearer fleet-secret"}),
            sent.headers.end());
  // The owner may hold an acquire for its waitMs: the call waits longer.
  EXPECT_GT(sent.timeout, 250ms);

  acquire_answer answer;
  answer.granted = {{"pg", "", 1}};
  answer.denied = {{"pg", "g", 1, 4, 4}};
  answer.lease_ttl_secs = 30;
  answer.contended = {{"pg", 2}};
  owner_answers("/worker/capacity/acquire", 200, worker_api::encode(answer));
  ASSERT_TRUE(*r && **r);
  EXPECT_EQ(***r, answer);
}

TEST_F(lease_forwarder_test, the_owners_refusals_keep_their_codes) {
  follow("https://owner:9000");
  const std::vector<std::pair<std::string, errc>> refusals = {
    {"notHeld", errc::lease_not_held},
    {"unknownSession", errc::unknown_session},
    {"staleCall", errc::stale_lease_call},
    {"unknownName", errc::bad_lease},
  };
  uint64_t seq = 1;
  for (const auto& [wire_code, ours] : refusals) {
    auto r = ask<acquire_answer>(atom::release::value, call(seq++));
    owner_answers("/worker/capacity/release", 409,
                  R"({"error":"refused for a reason","code":")" + wire_code + R"("})");
    EXPECT_EQ(code(r), ours) << wire_code;
    EXPECT_EQ(message_of((*r)->error()), "refused for a reason");
  }
}

TEST_F(lease_forwarder_test, an_owner_that_does_not_answer_properly_makes_it_try_again) {
  follow("https://owner:9000");
  // No answer at all, the owner's own overload and outage statuses, a
  // refusal this replica cannot name (its secret refused), and a 200
  // that is not an answer: each is "try again", with what happened.
  const std::vector<std::pair<int, std::string>> outcomes = {
    {0, ""},
    {502, "bad gateway"},
    {503, R"({"error":"draining"})"},
    {429, R"({"error":"slow down"})"},
    {401, R"({"error":"wrong secret"})"},
    {200, "not json"},
    {200, R"({"leaseTtlSecs":"soon"})"},
  };
  uint64_t seq = 1;
  for (const auto& [status, body] : outcomes) {
    auto r = ask<acquire_answer>(atom::renew::value, call(seq++));
    owner_answers("/worker/capacity/renew", status, body);
    ASSERT_EQ(code(r), errc::lease_owner_unavailable) << status << " " << body;
    EXPECT_FALSE(message_of((*r)->error()).empty());
  }
  // The replica serves on: the next call is forwarded and answered.
  auto r = ask<acquire_answer>(atom::renew::value, call(seq));
  acquire_answer ok;
  ok.lease_ttl_secs = 30;
  owner_answers("/worker/capacity/renew", 200, worker_api::encode(lease_verb::renew, ok));
  ASSERT_TRUE(*r && **r);
  EXPECT_EQ((**r)->lease_ttl_secs, 30u);
}

TEST_F(lease_forwarder_test, calls_on_their_way_to_a_replaced_owner_are_answered_at_once) {
  follow("https://old:9000");
  auto lease = acquire();
  auto sweep = ask<sweep_answer>(atom::sweep_lock::value, sweep_verb::acquire,
                                 sweep_call{"engine-reconcile", "w1", 0, 30, {}});
  ASSERT_EQ(transport->calls.size(), 2u);
  ASSERT_FALSE(*lease);
  ASSERT_FALSE(*sweep);

  follow("https://new:9000");
  EXPECT_EQ(code(lease), errc::lease_owner_unavailable);
  EXPECT_EQ(code(sweep), errc::lease_owner_unavailable);
  // The old owner's late answers find nobody waiting: dropped.
  owner_answers("old:9000/worker/capacity/acquire", 200, worker_api::encode(acquire_answer{}));
  owner_answers("old:9000/worker/sweep-lock/acquire", 200,
                worker_api::encode(sweep_verb::acquire, sweep_answer{}));

  // The worker's repeat goes to the new owner.
  auto again = acquire();
  ASSERT_EQ(transport->calls.size(), 1u);
  EXPECT_EQ(transport->calls.front().call.url, "https://new:9000/worker/capacity/acquire");
  owner_answers("new:9000", 200, worker_api::encode(acquire_answer{}));
  ASSERT_TRUE(*again && **again);
}

TEST_F(lease_forwarder_test, a_sweep_lock_call_is_forwarded_and_its_answer_decoded) {
  follow("https://owner:9000");
  auto counts = ask<sweep_answer>(atom::sweep_lock::value, sweep_verb::counts,
                                  sweep_call{"engine-reconcile", "w1", 0, 30, {}});
  ASSERT_EQ(transport->calls.size(), 1u);
  EXPECT_EQ(transport->calls.front().call.method, "GET");
  EXPECT_EQ(transport->calls.front().call.url,
            "https://owner:9000/worker/sweep-lock/counts?name=engine-reconcile");
  sweep_answer answer;
  answer.counts = {{"pg", 3, "cp-a", 120}};
  owner_answers("/worker/sweep-lock/counts", 200,
                worker_api::encode(sweep_verb::counts, answer));
  ASSERT_TRUE(*counts && **counts);
  EXPECT_EQ((**counts)->counts, answer.counts);
}
