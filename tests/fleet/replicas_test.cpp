// Control-plane replicas on one database: the same config has the same
// revision on each, an edit through one wakes the long polls parked on the
// other (LISTEN/NOTIFY, not the reload interval, which is off here), and a
// replica whose database read is held up serves its last good snapshot.
#include "tests/fleet/fleet_fixture.hpp"

#include <gtest/gtest.h>

#include <future>

using namespace qf;
using namespace qf::test_support;

namespace {

double reload_failures(uint16_t admin_port) {
  return metric_value("127.0.0.1", admin_port,
                      "queryflux_config_reload_failures_total{stage=\"reload\"}");
}

} // namespace

TEST_F(fleet_test, two_replicas_on_one_database_serve_one_revision_and_wake_each_others_polls) {
  fleet f{{sqlite_fleet(1, "  b: { engine: sqlite }\n"), url, ""}};
  auto replica = f.replica();
  auto a = f.control_plane().admin_port();
  auto b = replica->admin_port();
  auto first = f.served_revision(a);
  EXPECT_EQ(f.served_revision(b), first);

  // Rows in another order in the tables: still the same revision.
  query("UPDATE cluster_configs SET id = -id");
  auto third = f.replica();
  EXPECT_EQ(f.served_revision(third->admin_port()), first);
  third.reset();

  // A long poll parked on B ...
  auto parked = std::async(std::launch::async, [&] {
    return f.worker_api("/worker/config/wait?since=" + first + "&timeoutSecs=30", b);
  });
  ASSERT_TRUE(eventually([&] {
    auto text = http_request("GET", "http://127.0.0.1:" + std::to_string(b) + "/metrics").body;
    return text.find("queryflux_worker_config_long_polls 1") != std::string::npos;
  }));
  // ... is answered by an edit through A.
  ASSERT_EQ(f.admin("PUT", "/admin/config/groups/g", R"({"members": ["lite", "b"]})").status, 200);
  auto woken = parked.get();
  ASSERT_EQ(woken.status, 200) << woken.body;
  auto second = woken.json()["revision"].get<std::string>();
  EXPECT_NE(second, first);
  EXPECT_EQ(f.served_revision(a), second);
  EXPECT_EQ(f.served_revision(b), second);
  // Both serve the same bytes.
  EXPECT_EQ(f.worker_api("/worker/config", a).body, f.worker_api("/worker/config", b).body);
}

TEST_F(fleet_test, a_replica_whose_database_read_is_held_up_serves_its_last_good_snapshot) {
  fleet f{{sqlite_fleet(1, "  b: { engine: sqlite }\n"), url, ""}};
  auto a = f.control_plane().admin_port();
  auto good = f.served_revision(a);
  auto failures = reload_failures(a);
  // Another session holds the fleet tables; the revision moves, so the
  // replica reads them (and waits on the lock).
  pqxx::connection holder{this->url};
  pqxx::work lock{holder};
  lock.exec("LOCK TABLE cluster_configs IN ACCESS EXCLUSIVE MODE");
  query("UPDATE config_revision SET revision = revision + 1");
  // Answered all along (the lock is still held), with the last snapshot.
  for (int i = 0; i < 5; ++i) {
    auto r = f.worker_api("/worker/config", a);
    ASSERT_EQ(r.status, 200);
    EXPECT_EQ(r.json()["revision"], good);
  }
  // The read gives up after 10 s and is counted; the last good one stays.
  ASSERT_TRUE(eventually([&] { return reload_failures(a) > failures; }, 30s));
  EXPECT_EQ(f.served_revision(a), good);
  // A worker starting now gets it.
  f.add_worker(worker_named("late", 1));
  ASSERT_TRUE(eventually([&] { return active(f, 0) == good; }));
  lock.abort();
}
