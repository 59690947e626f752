// The cores a cgroup's quota allows, as the wire loops are sized by them.
#include "io/usable_cores.hpp"

#include <gtest/gtest.h>

#include <thread>

using qf::io::cores_in_cpu_max;

TEST(usable_cores, a_cgroup_quota_is_read_and_rounded_up) {
  EXPECT_EQ(cores_in_cpu_max("200000 100000\n"), 2u);
  EXPECT_EQ(cores_in_cpu_max("150000 100000"), 2u);
  EXPECT_EQ(cores_in_cpu_max("50000 100000\n"), 1u);
}

TEST(usable_cores, no_limit_or_unreadable_text_limits_nothing) {
  EXPECT_EQ(cores_in_cpu_max("max 100000\n"), std::nullopt);
  EXPECT_EQ(cores_in_cpu_max(""), std::nullopt);
  EXPECT_EQ(cores_in_cpu_max("200000"), std::nullopt);
  EXPECT_EQ(cores_in_cpu_max("200000 0"), std::nullopt);
  EXPECT_EQ(cores_in_cpu_max("-1 100000"), std::nullopt);
  EXPECT_EQ(cores_in_cpu_max("12x 100000"), std::nullopt);
}

TEST(usable_cores, never_more_than_the_machine_has_nor_fewer_than_one) {
  auto cores = qf::io::usable_cores();
  EXPECT_GE(cores, 1u);
  EXPECT_LE(cores, std::max(1u, std::thread::hardware_concurrency()));
}
