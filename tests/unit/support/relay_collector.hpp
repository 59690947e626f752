// A pg_async_connection listener that collects a relayed run: the server's
// messages as bytes, how it ended, or that it was moved off a pipeline.
// Optionally pauses at its first messages until told to read on.
#pragma once

#include "engines/pg_async_connection.hpp"
#include "protocols/pgwire/frontend.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>

namespace qf::test_support {

struct relay_collector : engines::pg_async_listener {
  std::string messages;
  int64_t data_rows = 0;
  std::string error_code;
  /// Taken off a pipeline (on_relay_moved()): it ended without an answer.
  bool moved = false;
  bool detached = false;
  /// on_relayed() says stop reading, once, while set.
  bool pause_first = false;
  std::atomic<bool> paused{false};
  std::promise<void> done;
  std::shared_future<void> finished = done.get_future().share();

  /// It ended (or was moved) within `within`.
  bool ended(std::chrono::seconds within = std::chrono::seconds(30)) const {
    return finished.wait_for(within) == std::future_status::ready;
  }
  bool still_running() const {
    return finished.wait_for(std::chrono::seconds(0)) == std::future_status::timeout;
  }

  void on_notice(const engines::notice&) override {
    ADD_FAILURE() << "a relay's notices are among its bytes";
  }
  void on_columns(std::vector<column>) override {
    ADD_FAILURE() << "a relay reports bytes";
  }
  bool on_rows(row_batch&) override {
    ADD_FAILURE() << "a relay reports bytes";
    return true;
  }
  void on_done(int64_t) override {
    ADD_FAILURE() << "a relay reports bytes";
  }
  void on_failed(const engines::engine_error& e) override {
    error_code = e.sqlstate();
    done.set_value();
  }
  bool on_relayed(std::string_view m) override {
    messages.append(m);
    if (pause_first && !paused) {
      paused = true;
      return false;
    }
    return true;
  }
  void on_relay_done(int64_t rows, const engines::engine_error* e) override {
    data_rows = rows;
    if (e)
      error_code = e->sqlstate();
    done.set_value();
  }
  void on_relay_detached() override {
    detached = true;
  }
  void on_relay_moved() override {
    EXPECT_TRUE(detached) << "told at once to let go of the connection, before the move";
    moved = true;
    done.set_value();
  }

  /// The first column of the first DataRow, as text.
  std::string first_cell() const {
    std::string_view rest = messages;
    while (!rest.empty()) {
      pgwire::frame f;
      auto d = pgwire::next_frame(rest, false, 1 << 30, f);
      if (d.status != pgwire::decode_status::ok)
        break;
      if (f.tag == 'D' && f.body.size() >= 6) {
        auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(f.body[i])); };
        uint32_t len = b(2) << 24 | b(3) << 16 | b(4) << 8 | b(5);
        return len == 0xFFFFFFFF ? "NULL" : std::string{f.body.substr(6, len)};
      }
      rest.remove_prefix(d.consumed);
    }
    return "(no row)";
  }
};

} // namespace qf::test_support
