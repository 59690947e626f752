// The control plane goes away and comes back: workers keep serving their
// last config meanwhile, count their failures, and follow it again after.
#include "tests/fleet/fleet_fixture.hpp"

#include <gtest/gtest.h>

using namespace qf;
using namespace qf::test_support;

TEST_F(fleet_test, workers_serve_their_last_config_while_the_control_plane_restarts) {
  fleet f{{sqlite_fleet(1), url, ""}};
  for (int i = 0; i < 3; ++i)
    f.add_worker(worker_on_own_limits("w" + std::to_string(i), 1));
  auto first = f.served_revision();
  ASSERT_TRUE(eventually([&] { return all_run(f, first); }));
  ASSERT_EQ(trino_query(f.worker(0).trino_port(), "SELECT v FROM t"), nlohmann::json::parse("[[1]]"));

  f.stop_control_plane();
  ASSERT_TRUE(eventually([&] {
    for (size_t i = 0; i < f.size(); ++i)
      if (f.status(i).value("consecutiveFailures", 0) < 2)
        return false;
    return true;
  })) << f.status(0).dump();
  auto down = f.status(1);
  EXPECT_EQ(down["activeRevision"], first);
  EXPECT_NE(down["lastError"].get<std::string>().find("cannot sync with the control plane"),
            std::string::npos)
    << down.dump();
  // Still serving, from memory.
  EXPECT_EQ(trino_query(f.worker(1).trino_port(), "SELECT v FROM t"), nlohmann::json::parse("[[1]]"));

  f.start_control_plane(); // the same database: the same config, the same revision
  EXPECT_EQ(f.served_revision(), first);
  // Each worker comes back at its next try: up to a backoff (a minute).
  ASSERT_TRUE(eventually([&] {
    for (size_t i = 0; i < f.size(); ++i)
      if (f.status(i).value("consecutiveFailures", -1) != 0)
        return false;
    return true;
  }, 150s));
  ASSERT_EQ(f.admin("PUT", "/admin/config/clusters/lite", lite_with(2)).status, 200);
  auto second = f.served_revision();
  ASSERT_TRUE(eventually([&] { return all_run(f, second); }));
  EXPECT_TRUE(eventually([&] {
    return trino_query(f.worker(2).trino_port(), "SELECT v FROM t") == nlohmann::json::parse("[[2]]");
  }));
}

TEST_F(fleet_test, a_cut_link_keeps_one_worker_on_its_config_and_the_others_follow) {
  fleet f{{sqlite_fleet(1), url, ""}};
  f.add_worker(worker_on_own_limits("cut", 1));
  f.add_worker(worker_on_own_limits("kept", 1));
  auto first = f.served_revision();
  ASSERT_TRUE(eventually([&] { return all_run(f, first); }));
  f.link(0).cut();
  ASSERT_EQ(f.admin("PUT", "/admin/config/clusters/lite", lite_with(5)).status, 200);
  auto second = f.served_revision();
  ASSERT_TRUE(eventually([&] { return active(f, 1) == second; }));
  ASSERT_TRUE(eventually([&] { return f.status(0).value("consecutiveFailures", 0) >= 1; }));
  EXPECT_EQ(active(f, 0), first);
  EXPECT_EQ(trino_query(f.worker(0).trino_port(), "SELECT v FROM t"), nlohmann::json::parse("[[1]]"));
  f.link(0).restore();
  ASSERT_TRUE(eventually([&] { return active(f, 0) == second; }, 150s));
  EXPECT_TRUE(eventually([&] {
    return trino_query(f.worker(0).trino_port(), "SELECT v FROM t") == nlohmann::json::parse("[[5]]");
  }));
}
