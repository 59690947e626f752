// The worker's control-plane link on CAF's deterministic scheduler: its
// HTTP calls go to a transport the test answers by hand, its activations
// to a holder that records them (and can hold them back), time is virtual.
#include "actors/node/metrics.hpp"
#include "actors/worker/control_plane_link.hpp"
#include "tests/unit/actors/deterministic_test.hpp"
#include "tests/unit/actors/scripted_transport.hpp"

#include <caf/all.hpp>
#include <gtest/gtest.h>

using namespace qf;
using namespace std::chrono_literals;

namespace {

struct holder_log {
  std::vector<std::string> activated;
  std::vector<std::string> confirmed;
  bool hold = false;
  std::vector<caf::typed_response_promise<bool>> held;
};

snapshot_holder_actor::behavior_type recording_holder(snapshot_holder_actor::pointer self,
                                                      std::shared_ptr<holder_log> log) {
  return {
    [](atom::update, fleet_update&) { return true; },
    [self, log](atom::activate, fleet_update&, snapshot_origin& o) -> caf::result<bool> {
      log->activated.push_back(o.encoded->revision);
      if (!log->hold)
        return true;
      log->held.push_back(self->make_response_promise<bool>());
      return log->held.back();
    },
    [log](atom::confirm, const std::string& revision, int64_t) {
      log->confirmed.push_back(revision);
    },
    // A promise is delivered from within its actor: the test sends this
    // to let the held activations through, in order.
    [log](atom::close, bool) {
      for (auto& p : log->held)
        p.deliver(true);
      log->held.clear();
    },
    [](atom::get) { return holder_status{}; },
  };
}

constexpr const char* worker_yaml = R"(
queryflux:
  role: worker
  controlPlane: { url: "https://cp:9000", auth: { mode: sharedSecret, sharedSecret: s } }
)";

/// A snapshot body whose cluster differs by `pool`.
worker_api::encoded_snapshot snapshot(int pool) {
  worker_api::snapshot_content c;
  c.fleet.clusters = {{"c", R"({"engine":"sqlite","poolSize":)" + std::to_string(pool) + "}"}};
  c.fleet.groups = {{"g", R"({"members":["c"]})"}};
  std::string error;
  return *worker_api::encode(c, error);
}

class control_plane_link_test : public deterministic_test {
protected:
  ~control_plane_link_test() override {
    for (const auto& hdl : spawned)
      caf::anon_send_exit(hdl, caf::exit_reason::user_shutdown);
    sched.run();
  }

  control_plane_link_actor start(std::optional<config::peer_bootstrap> peers = {}) {
    holder = sys.spawn(recording_holder, log);
    spawned.push_back(caf::actor_cast<caf::actor>(holder));
    auto s = std::make_shared<control_plane_link_settings>();
    s->control_plane.url = "https://cp:9000";
    s->control_plane.shared_secret = "s";
    s->control_plane.peer_bootstrap = peers;
    s->worker_name = "w";
    s->version = "test";
    s->worker_yaml = worker_yaml;
    s->transport = transport;
    s->holder = holder;
    s->stats = std::make_shared<metrics>();
    auto link = sys.spawn(control_plane_link, s);
    spawned.push_back(caf::actor_cast<caf::actor>(link));
    sched.run();
    return link;
  }

  size_t polls_waiting() const {
    size_t n = 0;
    for (const auto& c : transport->calls)
      n += c.call.url.find("/worker/config") != std::string::npos;
    return n;
  }

  /// Answers the poll waiting (if any) with `s`; true when there was one.
  bool answer_poll(const worker_api::encoded_snapshot& s) {
    bool answered = transport->answer("/worker/config", 200, worker_api::config_body(s));
    sched.run();
    return answered;
  }

  std::shared_ptr<scripted_transport> transport = std::make_shared<scripted_transport>();
  std::shared_ptr<holder_log> log = std::make_shared<holder_log>();
  std::vector<caf::actor> spawned;
  snapshot_holder_actor holder;
};

} // namespace

TEST_F(control_plane_link_test, replicas_that_disagree_cannot_make_it_poll_in_a_loop) {
  start();
  auto a = snapshot(1);
  auto b = snapshot(2);
  ASSERT_TRUE(answer_poll(a));
  ASSERT_EQ(log->activated, std::vector<std::string>{a.revision});
  // From now on every poll is answered at once, alternately by two
  // replicas serving different revisions: each answer is "news".
  size_t polls = 0;
  for (int tick = 0; tick < 100; ++tick) { // 10 s
    for (int i = 0; i < 50 && polls_waiting() > 0; ++i) {
      ASSERT_TRUE(answer_poll(polls % 2 == 0 ? b : a));
      ++polls;
    }
    sched.advance_time(100ms);
    sched.run();
  }
  // A burst of two, then one a second (the first answer, a revision not
  // seen before, is exempt).
  EXPECT_LE(polls, 13u) << polls << " polls in 10 s";
  EXPECT_GE(polls, 10u);
}

TEST_F(control_plane_link_test, a_revert_while_an_activation_is_under_way_ends_on_the_revert) {
  start();
  auto a = snapshot(1);
  auto b = snapshot(2);
  ASSERT_TRUE(answer_poll(a));
  log->hold = true;
  ASSERT_TRUE(answer_poll(b)); // activation of b held by the holder
  ASSERT_TRUE(answer_poll(a)); // and the control plane is back on a
  ASSERT_EQ(log->activated, (std::vector<std::string>{a.revision, b.revision, a.revision}));
  caf::anon_send(holder, atom::close::value, false); // let the activations through
  sched.run();
  // A poll now asks for a change from a, which is what runs.
  ASSERT_EQ(polls_waiting(), 1u);
  EXPECT_NE(transport->calls.back().call.url.find("since=" + a.revision), std::string::npos)
    << transport->calls.back().call.url;
}

TEST_F(control_plane_link_test, no_peer_copy_comes_after_a_control_plane_snapshot) {
  transport->peers = {"10.0.0.1"};
  config::peer_bootstrap pb;
  pb.address = "peers:9000";
  pb.after = 0s;
  start(pb);
  sched.advance_time(1ms); // afterSecs: 0, still a timer
  sched.run();
  ASSERT_EQ(transport->calls.size(), 3u); // register, the poll, the peer's copy
  auto b = snapshot(2);
  log->hold = true;
  ASSERT_TRUE(answer_poll(b)); // activating, not active yet
  // The peer's older copy arrives now.
  auto p = snapshot(1);
  ASSERT_TRUE(transport->answer("/worker/peer-config", 200, worker_api::peer_body(p, wall_ms())));
  sched.run();
  EXPECT_EQ(log->activated, std::vector<std::string>{b.revision});
}

TEST_F(control_plane_link_test, drain_is_answered_once_the_control_plane_heard_draining) {
  auto link = start();
  ASSERT_TRUE(transport->answer("/worker/register", 200));
  sched.run();
  // A heartbeat saying active is on its way when the drain comes.
  sched.advance_time(10s);
  sched.run();
  ASSERT_EQ(transport->calls.back().call.url, "https://cp:9000/worker/heartbeat");
  bool drained = false;
  sys.spawn([&, link](caf::event_based_actor* self) {
    self->request(link, caf::infinite, atom::drain::value)
      .then([&](atom::ok) { drained = true; }, [](caf::error&) {});
  });
  sched.run();
  ASSERT_TRUE(transport->answer("/worker/heartbeat", 200)); // the active one
  sched.run();
  EXPECT_FALSE(drained);
  ASSERT_FALSE(transport->calls.empty());
  EXPECT_NE(transport->calls.back().call.body.find("\"status\":\"draining\""), std::string::npos);
  ASSERT_TRUE(transport->answer("/worker/heartbeat", 200));
  sched.run();
  EXPECT_TRUE(drained);
}
