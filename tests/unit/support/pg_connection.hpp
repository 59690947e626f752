// A pg_async_connection to the PostgreSQL the test command starts
// (QF_PG_URL), opened on a loop as the lane pool opens one, waited for
// from the test's thread.
#pragma once

#include "engines/pg_async_connection.hpp"
#include "io/event_loop.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <memory>
#include <string>

namespace qf::test_support {

inline std::string pg_server_url() {
  auto* url = std::getenv("QF_PG_URL");
  return url ? url : "postgres://postgres@127.0.0.1:15432/postgres";
}

inline std::shared_ptr<engines::pg_async_connection> open_pg_connection(io::event_loop& loop) {
  std::promise<std::shared_ptr<engines::pg_async_connection>> opened;
  loop.post([&] {
    engines::pg_async_connection::open(
      pg_server_url(), loop, [&](std::shared_ptr<engines::pg_async_connection> c, std::string why) {
        EXPECT_TRUE(c) << why;
        opened.set_value(std::move(c));
      });
  });
  auto f = opened.get_future();
  EXPECT_EQ(f.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  return f.get();
}

} // namespace qf::test_support
