// The names a node gives itself: the canonical host name, which a
// control-plane replica advertises to the others, is one the resolver
// resolves.
#include "io/host_name.hpp"

#include <gtest/gtest.h>
#include <netdb.h>
#include <sys/socket.h>

namespace {

bool resolves(const std::string& name) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(name.c_str(), nullptr, &hints, &found) != 0)
    return false;
  ::freeaddrinfo(found);
  return true;
}

} // namespace

TEST(host_name_test, the_canonical_name_resolves_where_the_bare_one_does) {
  auto bare = qf::io::host_name();
  ASSERT_FALSE(bare.empty());
  auto canonical = qf::io::canonical_host_name();
  ASSERT_FALSE(canonical.empty());
  if (!resolves(bare)) // a host that cannot resolve itself keeps its name
    GTEST_SKIP() << bare << " does not resolve here";
  EXPECT_TRUE(resolves(canonical)) << canonical;
}
