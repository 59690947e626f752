// A lane pool's fetch() run on `loop`, as a wire session runs it, waited
// for from the test's thread: the connection it handed over, or null.
#pragma once

#include "io/event_loop.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>

namespace qf::test_support {

template <class Pool>
auto fetch_from(Pool& pool, io::event_loop& loop, std::string* why = nullptr) {
  using connection_ptr = decltype(pool.take(loop));
  std::promise<connection_ptr> fetched;
  loop.post([&] {
    pool.fetch(loop, [&](connection_ptr c, std::string error) {
      EXPECT_TRUE(loop.in_loop_thread()) << "done ran off the fetching loop";
      if (why)
        *why = error;
      fetched.set_value(std::move(c));
    });
  });
  auto f = fetched.get_future();
  if (f.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "fetch() did not finish within 10 s";
    return connection_ptr{};
  }
  return f.get();
}

} // namespace qf::test_support
