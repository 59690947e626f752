// host:port as URLs and peer addresses write it, IPv6 in brackets.
#include "protocols/common/host_port.hpp"

#include <gtest/gtest.h>

using qf::join_host_port;
using qf::split_host_port;

TEST(host_port, names_addresses_and_ipv6_in_brackets_split_and_join_back) {
  auto a = split_host_port("queryflux-workers:9000", std::nullopt);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->host, "queryflux-workers");
  EXPECT_EQ(a->port, 9000);
  auto b = split_host_port("[::1]:9443", std::nullopt);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->host, "::1");
  EXPECT_EQ(b->port, 9443);
  EXPECT_EQ(join_host_port(b->host, b->port), "[::1]:9443");
  EXPECT_EQ(join_host_port("cp", 9000), "cp:9000");
  auto c = split_host_port("[fe80::1]", uint16_t{443});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->port, 443);
  EXPECT_EQ(split_host_port("cp", uint16_t{80})->port, 80);
}

TEST(host_port, anything_else_is_refused) {
  for (auto bad : {"", ":9000", "cp:", "cp:0", "cp:65536", "cp:9x", "::1:9000", "[::1", "[::1]x",
                   "[]:1"})
    EXPECT_FALSE(split_host_port(bad, std::nullopt)) << bad;
  EXPECT_FALSE(split_host_port("cp", std::nullopt)); // the port is required here
}
