// A listener's default maxConnections from the descriptor limit.
#include "io/descriptor_limit.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>

TEST(descriptor_limit, half_of_what_is_left_within_bounds) {
  EXPECT_EQ(qf::io::connection_limit_for(1024), 384u);
  EXPECT_EQ(qf::io::connection_limit_for(20000), 9872u);
  EXPECT_EQ(qf::io::connection_limit_for(100), 64u);        // never below 64
  EXPECT_EQ(qf::io::connection_limit_for(1u << 30), 100000u); // nor above 100,000
}

TEST(descriptor_limit, the_soft_limit_is_raised_to_the_hard_one) {
  auto limit = qf::io::default_connection_limit();
  rlimit rl{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
  EXPECT_EQ(rl.rlim_cur, rl.rlim_max);
  EXPECT_EQ(limit, qf::io::connection_limit_for(rl.rlim_cur == RLIM_INFINITY ? 1'000'000 : rl.rlim_cur));
}
