// Peer bootstrap: a worker that starts while its control plane is away
// copies a running worker's config, found at every address the peers'
// name resolves to; it runs it as stale until the control plane confirms it.
#include "tests/fleet/fleet_fixture.hpp"

#include "net/http/client.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>

using namespace qf;
using namespace qf::test_support;

namespace {

/// The real client, with one name resolved as a headless Service would:
/// to the addresses of the peers (the first has nobody listening).
class headless_service : public http_transport {
public:
  headless_service(std::string name, std::vector<std::string> addresses)
    : name_(std::move(name)), addresses_(std::move(addresses)) {
    // nop
  }

  void send(http_call call, std::function<void(http_outcome)> done) override {
    real_.send(std::move(call), std::move(done));
  }

  void resolve(std::string host, std::function<void(std::vector<std::string>)> done) override {
    if (host == name_)
      return done(addresses_);
    real_.resolve(std::move(host), std::move(done));
  }

  void stop() override {
    real_.stop();
  }

private:
  std::string name_;
  std::vector<std::string> addresses_;
  http::client real_;
};

/// A port free on both addresses: the peers share it, as pods do.
uint16_t shared_port(const std::string& a, const std::string& b) {
  for (uint16_t p = 28500; p < 28600; ++p) {
    int fa = ::socket(AF_INET, SOCK_STREAM, 0);
    int fb = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{}, sb{};
    sa.sin_family = sb.sin_family = AF_INET;
    sa.sin_port = sb.sin_port = htons(p);
    inet_pton(AF_INET, a.c_str(), &sa.sin_addr);
    inet_pton(AF_INET, b.c_str(), &sb.sin_addr);
    bool ok = ::bind(fa, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0
              && ::bind(fb, reinterpret_cast<sockaddr*>(&sb), sizeof sb) == 0;
    ::close(fa);
    ::close(fb);
    if (ok)
      return p;
  }
  throw std::runtime_error("no shared port");
}

std::string peer_yaml(uint16_t port, uint32_t max_age = 86400) {
  return "peerBootstrap: { address: \"peers.fleet.test:" + std::to_string(port)
         + "\", afterSecs: 0, maxAgeSecs: " + std::to_string(max_age) + " }";
}

worker_options peer(std::string name, std::string address, uint16_t port, uint32_t max_age,
                    std::vector<std::string> peers) {
  auto o = worker_on_own_limits(std::move(name), 1);
  o.address = std::move(address);
  o.ops_port = port;
  o.control_plane_yaml = peer_yaml(port, max_age);
  o.transport = std::make_shared<headless_service>("peers.fleet.test", std::move(peers));
  return o;
}

} // namespace

TEST_F(fleet_test, a_worker_starting_without_its_control_plane_copies_a_peer_until_confirmed) {
  fleet f{{sqlite_fleet(7), url, ""}};
  auto port = shared_port("127.0.0.2", "127.0.0.3");
  std::vector<std::string> peers{"127.0.0.9", "127.0.0.2"}; // nobody, then the running one
  f.add_worker(peer("running", "127.0.0.2", port, 86400, peers));
  auto revision = f.served_revision();
  ASSERT_TRUE(eventually([&] { return active(f, 0) == revision; }));
  auto confirmed = f.status(0)["confirmedAt"];

  f.stop_control_plane();
  f.add_worker(peer("newcomer", "127.0.0.3", port, 86400, peers));
  ASSERT_TRUE(eventually([&] { return active(f, 1) == revision; })) << f.status(1).dump();
  auto copied = f.status(1);
  EXPECT_EQ(copied["configSource"], "peer");
  EXPECT_TRUE(copied["stale"].get<bool>());
  // The peer's confirmation time, passed on unchanged: a copy never looks
  // fresher than what the control plane last said.
  EXPECT_EQ(copied["confirmedAt"], confirmed);
  EXPECT_EQ(metric_value("127.0.0.3", f.worker(1).admin_port(), "queryflux_worker_config_stale"), 1);
  EXPECT_EQ(metric_value("127.0.0.2", f.worker(0).admin_port(), "queryflux_worker_config_stale"), 0);
  // It serves from the copy.
  EXPECT_TRUE(eventually([&] {
    return trino_query(f.worker(1).trino_port(), "SELECT v FROM t", "127.0.0.3")
           == nlohmann::json::parse("[[7]]");
  }));

  f.start_control_plane();
  // At the newcomer's next try: up to a backoff (a minute).
  ASSERT_TRUE(eventually([&] { return !f.status(1).value("stale", true); }, 150s))
    << f.status(1).dump();
  auto now = f.status(1);
  EXPECT_EQ(now["configSource"], "controlPlane");
  EXPECT_EQ(now["activeRevision"], revision); // unchanged: confirmed, not fetched anew
  EXPECT_NE(now["confirmedAt"], confirmed);
  EXPECT_EQ(metric_value("127.0.0.3", f.worker(1).admin_port(), "queryflux_worker_config_stale"), 0);
}

TEST_F(fleet_test, a_peer_copy_older_than_max_age_is_refused) {
  fleet f{{sqlite_fleet(7), url, ""}};
  auto port = shared_port("127.0.0.2", "127.0.0.3");
  std::vector<std::string> peers{"127.0.0.2"};
  f.add_worker(peer("running", "127.0.0.2", port, 86400, peers));
  auto revision = f.served_revision();
  ASSERT_TRUE(eventually([&] { return active(f, 0) == revision; }));
  f.stop_control_plane();
  // The running worker's copy ages from its last confirmation on: the
  // scenario needs one older than the newcomer's maxAgeSecs of 1.
  auto stopped = std::chrono::steady_clock::now();
  ASSERT_TRUE(eventually([&] { return std::chrono::steady_clock::now() - stopped > 1500ms; }));
  f.add_worker(peer("strict", "127.0.0.3", port, 1, peers));
  ASSERT_TRUE(eventually([&] {
    auto s = f.status(1);
    auto error = s.value("peerBootstrap", nlohmann::json::object()).value("lastError", "");
    return error.find("maxAgeSecs") != std::string::npos;
  })) << f.status(1).dump();
  EXPECT_EQ(active(f, 1), "");
  EXPECT_EQ(http_request("GET", "http://127.0.0.3:" + std::to_string(f.worker(1).admin_port())
                                  + "/readyz")
              .status,
            503);
}
