// Fifty workers sync from one control plane, and one admin edit reaches them
// all; the registry lists every one of them with what it runs.
#include "tests/fleet/fleet_fixture.hpp"

#include <gtest/gtest.h>

using namespace qf;
using namespace qf::test_support;

TEST_F(fleet_test, fifty_workers_sync_and_one_admin_edit_reaches_them_all) {
  fleet f{{sqlite_fleet(1, "  spare: { engine: sqlite }\n"), url, ""}};
  auto first = f.served_revision();
  ASSERT_EQ(first.rfind("sha256:", 0), 0u);
  int n = std::getenv("QF_FLEET_N") ? std::atoi(std::getenv("QF_FLEET_N")) : 50;
  for (int i = 0; i < n; ++i)
    f.add_worker(worker_named("w" + std::to_string(i), 1));
  ASSERT_TRUE(eventually([&] { return all_run(f, first); })) << f.status(0).dump();

  auto edit = f.admin("PUT", "/admin/config/groups/g",
                      R"({"members": ["lite", "spare"], "maxRunningQueries": 6})");
  ASSERT_EQ(edit.status, 200) << edit.body;
  auto second = f.served_revision();
  ASSERT_NE(second, first);
  ASSERT_TRUE(eventually([&] { return all_run(f, second); }));

  // Each worker compiled it: the group has both members there.
  auto worker_clusters = f.worker(f.size() - 1).services()->snapshot->load()->config->groups;
  ASSERT_EQ(worker_clusters.size(), 1u);
  EXPECT_EQ(worker_clusters[0].members, (std::vector<std::string>{"lite", "spare"}));
  EXPECT_EQ(worker_clusters[0].max_running_queries, 6u);

  // The registry hears of all of them, running the current revision.
  ASSERT_TRUE(eventually([&] {
    auto list = f.admin("GET", "/admin/workers").json();
    if (!list.is_array() || list.size() != f.size())
      return false;
    for (const auto& w : list)
      if (w["activeRevision"] != second || !w["upToDate"].get<bool>() || w["status"] != "active")
        return false;
    return true;
  })) << f.admin("GET", "/admin/workers").body;
  auto one = f.admin("GET", "/admin/workers/w3").json();
  EXPECT_EQ(one["name"], "w3");
  EXPECT_EQ(one["coordinationMode"], "controlPlane");
  EXPECT_EQ(f.admin("GET", "/admin/workers/nobody").status, 404);
  // Written in batches: the table has them too.
  ASSERT_TRUE(eventually([&] {
    return query("SELECT count(*) FROM worker_registry WHERE active_revision = '" + second
                 + "'")[0][0]
             .as<int>()
           == static_cast<int>(f.size());
  }));
}
