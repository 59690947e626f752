// The secrets' random bytes come from a per-thread pool of the DRBG's
// output: each byte served once, the pool drawn again when it runs out.
#include "net/boundary/secure_random.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace qf::boundary {
namespace {

TEST(SecureRandom, NoValueIsServedTwiceAcrossManyRefills) {
  // 64-bit values: a repeat among 10000 fair ones is a 1-in-10^11 event,
  // while a pool that served a byte twice or skipped its refill repeats.
  std::set<uint64_t> seen;
  for (int i = 0; i < 10000; ++i)
    ASSERT_TRUE(seen.insert(random_value<uint64_t>()).second) << "at draw " << i;
}

TEST(SecureRandom, OddSizesStraddleTheRefill) {
  std::set<std::string> seen;
  for (int i = 0; i < 500; ++i) {
    auto hex = random_hex(13); // 1024 is no multiple of 13: draws straddle refills
    ASSERT_EQ(hex.size(), 26u);
    ASSERT_TRUE(seen.insert(hex).second);
  }
  auto big = random_hex(5000); // larger than the pool: several refills in one draw
  ASSERT_EQ(big.size(), 10000u);
  // Each 16 hex digits of it unlike any other.
  std::set<std::string> chunks;
  for (size_t at = 0; at < big.size(); at += 16)
    ASSERT_TRUE(chunks.insert(big.substr(at, 16)).second) << "at " << at;
}

TEST(SecureRandom, ThreadsDrawAtOnceWithoutRepeats) {
  // Each thread has a pool of its own: no lock, and (under the sanitizers)
  // no race between them.
  std::vector<std::vector<uint64_t>> drawn(2);
  std::vector<std::thread> threads;
  for (auto& out : drawn)
    threads.emplace_back([&out] {
      for (int i = 0; i < 2000; ++i)
        out.push_back(random_value<uint64_t>());
    });
  for (auto& t : threads)
    t.join();
  std::set<uint64_t> all(drawn[0].begin(), drawn[0].end());
  all.insert(drawn[1].begin(), drawn[1].end());
  EXPECT_EQ(all.size(), 4000u);
}

TEST(SecureRandom, AForkedChildDrawsNothingItsParentWillDraw) {
  auto before = random_value<uint64_t>(); // the pool holds unserved bytes now
  (void)before;
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto drawn = random_value<uint64_t>();
    auto n = ::write(pipe_fds[1], &drawn, sizeof drawn);
    ::_exit(n == sizeof drawn ? 0 : 1);
  }
  uint64_t in_child = 0;
  ASSERT_EQ(::read(pipe_fds[0], &in_child, sizeof in_child), static_cast<ssize_t>(sizeof in_child));
  int status = 0;
  ::waitpid(child, &status, 0);
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
  EXPECT_NE(in_child, random_value<uint64_t>()) << "parent and child served the same bytes";
}

} // namespace
} // namespace qf::boundary
